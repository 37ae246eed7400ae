"""The text reader: one item per line, read in blocks (Python's io and ISA-L or zlib, in a thread
of their own) and split in C++ (``dpsketch._core.split_lines``), which also checks UTF-8 and the
line length (the bad-line policy) and reads integer keys and the counter summaries' hashes in the
same pass. A mixin of :class:`dpsketch.io.input.Source`."""

from __future__ import annotations

import io
import logging
import os
import stat
import sys

import numpy as np

from .streams import (Plumbing, TEXT_BLOCK_BYTES, _BOM, _ON_BAD_CODE, InputError, _append, _gunzip, _inflater, _safe_position,
                      first_line)

_log = logging.getLogger(__name__)


class TextReader(Plumbing):
    def _text_blocks(self, block_bytes=None):
        """The decompressed bytes of the text input, in blocks of at most ``block_bytes`` (default
        TEXT_BLOCK_BYTES): read with
        Python's io and inflated with ISA-L or zlib (_inflater; both release the GIL; gzip is detected by its magic and
        every member is read, as gzip -d does), or through pyarrow's transcoding stream for an
        --encoding other than UTF-8."""
        size = block_bytes or TEXT_BLOCK_BYTES
        if not self.utf8:
            stream, owned = self._open_bytes()
            try:
                while chunk := stream.read(size):
                    yield chunk
            finally:
                if owned is not None:
                    owned.close()
            return
        if self.path == "-":
            # A reader of its own on stdin's descriptor: the thread reading it is not waited for
            # when a run stops early, and one blocked inside sys.stdin's own reader at exit
            # would abort the interpreter (it holds that reader's lock).
            try:
                raw = owned = open(sys.stdin.buffer.fileno(), "rb", closefd=False)
            except (AttributeError, OSError, ValueError):  # a replaced stdin without a descriptor
                raw, owned = sys.stdin.buffer, None
                if not hasattr(raw, "peek"):  # pragma: no cover - exotic stdin replacements
                    raw = io.BufferedReader(raw)
        else:
            try:
                raw = owned = open(self.path, "rb")
            except OSError as exc:
                raise InputError(f"cannot read {self.where()}: {exc.strerror or first_line(exc)}") from None
            st = os.fstat(raw.fileno())
            if stat.S_ISREG(st.st_mode):
                self.total, self.unit = st.st_size, "B"
                self._pos = _safe_position(raw, st.st_size)
        try:
            if raw.peek(2)[:2] == b"\x1f\x8b":
                _log.debug("%s: gzip, inflated by %s", self.where(), _inflater()[0].__name__)
                yield from _gunzip(raw, size)
            else:
                while chunk := raw.read(size):
                    yield chunk
        finally:
            if owned is not None:
                owned.close()

    def _text_chunks(self, table_hashes=False):
        """Key batches of text input, at most chunk_size keys each: the lines as
        dpsketch._keys.Utf8Lines, or with keys='int' their int64 keys (read in the split)."""
        for batch in self._text_lines(int_keys=self.keys.chosen == "int", table_hashes=table_hashes):
            for start in range(0, len(batch), self.chunk_size):
                if isinstance(batch, np.ndarray):
                    yield batch[start : start + self.chunk_size]
                else:
                    yield batch.slice(start, self.chunk_size)

    def _text_lines(self, int_keys=False, table_hashes=False):
        """Lines, split in C++ (dpsketch._core.split_lines) from decompressed blocks
        (:meth:`_text_blocks`): line ends \\n, \\r\\n or \\r; str.strip() whitespace; blank lines
        skipped; UTF-8 and the line length checked, a bad line handled by ``on_bad_line``; as
        dpsketch._keys.Utf8Lines batches, or with ``int_keys`` as int64 arrays of the lines that
        are integer keys (the rule of the module doc, applied in the same C++ pass; the other
        lines are dropped); ``table_hashes``: the Utf8Lines carry their slot-table hashes. The unconsumed bytes (one partial line) live in a buffer that doubles
        when full, and split_lines resumes its search where the last call stopped, so a line of L
        bytes costs O(L) however many blocks it spans; each call handles one block, so the loop
        sees a cancel (Ctrl-C) between blocks. Memory: a block plus one partial line (at most
        max_line_bytes; under skip/replace the rest of an overlong line is dropped as it comes)."""
        from .. import _core
        from ..sketches._keys import Utf8Lines
        from .._prefetch import Prefetch

        # Reading and inflating run in a thread of their own, a block or two ahead of the split:
        # inflating gzip costs about as much as splitting, so one thread doing both would be the
        # pipeline's bottleneck (the summary's update is the third stage). It has its own stop
        # event (stopping it must not cancel this read) and is not waited for when the split
        # stops early, so an error is not held up by a read from a pipe that delivers nothing.
        blocks = Prefetch(self._text_blocks(), name="dpsketch-inflate")
        on_bad = _ON_BAD_CODE[self.on_bad_line]
        buf = np.empty(2 * TEXT_BLOCK_BYTES, dtype=np.uint8)
        lo = hi = 0  # buf[lo:hi]: bytes read and not yet consumed
        scanned, discarding, lines_before = 0, False, 0
        bom_checked = not self.utf8
        try:
            while not self._cancel.is_set():
                chunk = blocks.get()
                eof = chunk is Prefetch.DONE
                if eof:
                    chunk = b""
                if chunk:
                    buf, lo, hi = _append(buf, lo, hi, np.frombuffer(chunk, dtype=np.uint8))
                if not bom_checked:  # only at the start of the input, before any line is split
                    if hi - lo < 3 and not eof:
                        continue
                    bom_checked = True
                    if buf[lo : lo + 3].tobytes() == _BOM:
                        lo += 3
                r = _core.split_lines(buf[lo:hi], eof, self.max_line_bytes, on_bad, scanned, discarding, int_keys,
                                      table_hashes)
                if r["error"]:
                    line = lines_before + int(r["error_line"]) + 1
                    if r["error"] == 1:
                        raise InputError(
                            f"{self._at('line', line)} is not valid {self.encoding} text; "
                            f"--on-bad-line skip or replace goes on (or pass the right --encoding)")
                    raise self._too_long(line)
                self.skipped += len(r["blank"])
                self.bad_lines += int(r["bad"])
                lines_before += int(r["lines"])
                if int_keys:
                    if len(r["ints"]):
                        yield r["ints"]
                elif len(r["offsets"]) > 1:
                    yield Utf8Lines(r["data"], r["offsets"], r["hashes"] if table_hashes else None)
                lo += int(r["consumed"])
                scanned, discarding = int(r["scanned"]), bool(r["discarding"])
                if lo == hi:
                    lo = hi = 0
                    if buf.size > 4 * TEXT_BLOCK_BYTES:  # a long line has passed: give its memory back
                        buf = np.empty(2 * TEXT_BLOCK_BYTES, dtype=np.uint8)
                if eof:
                    return
        finally:
            # pyarrow's transcoding stream may read sys.stdin itself: that reader is waited for
            blocks.close(wait=not self.utf8)
