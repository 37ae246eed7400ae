"""The CSV/TSV reader: the picked columns of a delimited file, parsed by ``pyarrow.csv`` in blocks
of ``max_line_bytes`` (the header read first, checked for binary bytes and bare carriage returns),
malformed rows and ill-formed UTF-8 cells under the bad-line policy; and the CSV with an event-time
column of ``dpsketch top --window`` (``--follow`` included). A mixin of
:class:`dpsketch.io.input.Source`."""

from __future__ import annotations

import csv
import re

import numpy as np

from .streams import (Plumbing, _BOM, InputError, InputUsageError, _aligned, _aligned_columns, _both, _Chain, _field_index,
                      _hex_prefix, _LongRowFilter, _names, _pa, _short_lines, _take, _trim, _values, first_line)
from .values import _MAX_EPOCH_SECONDS, _event_times, _numbers_kept


class DelimitedReader(Plumbing):
    def _header_fields(self, first: bytes) -> list:
        """The fields of the CSV's first line. Bytes that cannot start a CSV file -- a NUL or other
        control bytes (binary data), or a bare CR inside the line (old Mac and Excel exports end
        lines with CR alone, which the reader does not split on) -- are a clear InputError naming
        the fix, never a traceback; the message echoes none of the bytes."""
        line = first.rstrip(b"\r\n")
        if self.no_header:  # the first line is a row of data: its bytes are the data's business
            try:
                return next(csv.reader([line.decode("utf-8", errors="replace")], delimiter=self.delimiter))
            except csv.Error:
                raise InputError(f"{self.where()}: the first row is not CSV; if its lines end with a bare carriage "
                                 "return (old Mac or Excel export), convert them first: tr '\\r' '\\n'") from None
        if any(b < 0x20 and b not in (0x09, 0x0D) or b == 0x7F for b in line):
            raise InputError(f"{self.where()} does not start with a line of CSV text (it holds control or binary "
                             "bytes); pass a CSV file, or --format parquet / arrow / text for other input")
        if b"\r" in line:
            raise InputError(f"{self.where()} ends its lines with a bare carriage return (old Mac or Excel "
                             "export); convert the line ends first, for example: tr '\\r' '\\n' < IN > OUT.csv")
        try:
            return next(csv.reader([line.decode("utf-8", errors="replace")], delimiter=self.delimiter))
        except csv.Error as exc:
            raise InputError(f"{self.where()}: the first line is not CSV ({exc})") from None

    def _csv_batches(self):
        """Record batches of the item column (then the privacy id column, when there is one) as
        unstripped large_string arrays, parsed by pyarrow in blocks of max_line_bytes."""
        pa, _ = _pa()
        import pyarrow.csv as pcsv

        stream, owned = self._open_bytes()
        try:
            head = stream.read(self.max_line_bytes + 1)
            nl = head.find(b"\n")
            if nl < 0 and len(head) > self.max_line_bytes:
                raise self._too_long(what="row", skippable=False)  # the header (or first row): no way past it
            if self.utf8 and head.startswith(_BOM):
                head = head[3:]
                nl = head.find(b"\n")
            first = head if nl < 0 else head[: nl + 1]
            if not first.strip():
                raise InputError(f"{self.where()} is empty (no CSV header row)" if not self.no_header
                                 else f"{self.where()} has no items")
            fields = self._header_fields(first)
            if self.no_header:
                picked = [self._field(len(fields), "--column", self.col_index or 0)]
                if self.privacy_id is not None:
                    picked.append(self._field(len(fields), "--privacy-id", self.id_index))
                body = head
            else:
                header = [h.strip() for h in fields]
                picked = [self._pick_column(header)]
                if self.privacy_id is not None:
                    picked.append(self._pick_id_column(header))
                body = head[len(first):]
            names = [f"f{i}" for i in range(len(fields))]  # unique names for Arrow; the pick is by index
            wanted = [names[i] for i in picked]
            header_rows = 0 if self.no_header else 1
            malformed_row = []

            def on_malformed(row):
                # a row with the wrong number of fields: skipped under skip and replace (a row
                # cannot be mended); Arrow numbers it only when it parses on one thread
                if self.on_bad_line == "error":
                    malformed_row.append(None if row.number is None else row.number + header_rows)
                    return "error"
                self._count_bad()
                return "skip"

            body_stream = _Chain(body, stream)
            if self.on_bad_line != "error":
                body_stream = _LongRowFilter(body_stream, self.max_line_bytes, dropped=self._count_bad)
            try:
                reader = pcsv.open_csv(
                    pa.PythonFile(body_stream, mode="r"),
                    # a row of max_line_bytes and its "\\r\\n" fit one block
                    read_options=pcsv.ReadOptions(column_names=names, block_size=max(self.max_line_bytes + 2, 1 << 16),
                                                  use_threads=not self.name_positions),
                    parse_options=pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=False,
                                                    invalid_row_handler=on_malformed),
                    convert_options=pcsv.ConvertOptions(include_columns=wanted,
                                                        column_types={n: pa.large_string() for n in wanted},
                                                        strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                        check_utf8=False),  # checked below, per on_bad_line
                )
            except pa.ArrowInvalid as exc:
                if "Empty CSV" in str(exc):
                    return  # a header and nothing else
                raise InputError(self._csv_message(exc, malformed_row)) from None
            rows_before = header_rows
            while not self._cancel.is_set():
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except pa.ArrowInvalid as exc:
                    raise InputError(self._csv_message(exc, malformed_row)) from None
                batch = self._checked_utf8(batch.select(wanted), rows_before)
                rows_before += batch.num_rows
                yield batch
        finally:
            if owned is not None:
                owned.close()

    def _field(self, count, option, idx):
        if idx >= count:
            raise InputUsageError(f"{self.where()} has {count} field(s) per row; {option} {idx} is field {idx + 1}")
        return idx

    def _csv_message(self, exc, malformed_row=()):
        """Arrow's CSV errors quote the offending row; keep only what went wrong (and the row's
        number, when positions may be named and Arrow knew it)."""
        msg = first_line(exc)
        if re.search(r"Expected \d+ columns, got \d+", msg):
            row = malformed_row[0] if malformed_row else None
            where = self._at("row", row) if row is not None else f"a row of {self.where()}"
            return (f"malformed CSV: {where} has a different number of fields than the header "
                    f"(check --delimiter and quoting; --on-bad-line skip goes on)")
        if "straddl" in msg or "block size" in msg:
            return (f"a row of {self.where()} is longer than {self.max_line_bytes:,} bytes; raise "
                    f"--max-line-length if the input really has such rows")
        if "UTF8" in msg or "utf8" in msg.lower():
            return f"{self.where()} is not valid {self.encoding} text; pass --encoding"
        return f"malformed CSV in {self.where()} (check --delimiter and quoting)"

    def _checked_utf8(self, batch, rows_before):
        """``batch`` (the picked columns, unchecked) with its ill-formed UTF-8 cells handled by
        ``on_bad_line``: an error, the row skipped, or the cell decoded with U+FFFD replacements.
        Arrow checks a whole column at once; only a column that fails is looked at cell by cell."""
        pa, _ = _pa()
        bad_rows = None
        columns = list(batch.columns)
        for j, arr in enumerate(columns):
            try:
                arr.validate(full=True)
                continue
            except pa.ArrowInvalid:
                pass
            raw = arr.cast(pa.large_binary()).to_pylist()
            bad = np.zeros(len(raw), dtype=bool)
            fixed = []
            for i, cell in enumerate(raw):
                try:
                    fixed.append(cell.decode("utf-8"))
                except UnicodeDecodeError:
                    bad[i] = True
                    fixed.append(cell.decode("utf-8", errors="replace"))
            if self.on_bad_line == "error":
                row = rows_before + int(np.argmax(bad)) + 1
                raise InputError(f"{self._at('row', row)} is not valid {self.encoding} text; "
                                 f"--on-bad-line skip or replace goes on (or pass the right --encoding)")
            bad_rows = bad if bad_rows is None else bad_rows | bad
            if self.on_bad_line == "replace":
                columns[j] = pa.array(fixed, type=pa.large_string())
        if bad_rows is None:
            return batch
        self.bad_lines += int(np.count_nonzero(bad_rows))
        batch = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
        return batch.filter(pa.array(~bad_rows)) if self.on_bad_line == "skip" else batch

    def _csv_trimmed_pairs(self):
        """Each CSV batch's item and privacy id columns, trimmed, without the rows where either is empty."""
        for batch in self._table_batches():
            items, items_nonempty = _trim(batch.column(0))
            ids, ids_nonempty = _trim(batch.column(1))
            if items_nonempty is not None or ids_nonempty is not None:
                both = _both(items_nonempty, ids_nonempty)
                items, ids = _take(items, both), _take(ids, both)
            yield items, ids

    def _csv_pairs(self):
        for keys, ids in self._csv_trimmed_pairs():
            if len(keys):
                keys, ids = _aligned(*self.keys.convert_kept(keys), *self.ids.convert_kept(ids))
            if len(keys):
                yield keys, ids

    def _csv_number_pairs(self, integer, bits):
        for texts, ids in self._csv_trimmed_pairs():
            for start in range(0, len(texts), self.chunk_size):
                part = texts.slice(start, self.chunk_size)
                values, ids_part = _aligned(*_numbers_kept(part.to_pylist(), integer, bits),
                                            *self.ids.convert_kept(ids.slice(start, self.chunk_size)))
                if len(values):
                    yield values, ids_part

    def _csv_timed(self, time_column, follow):
        pa, _ = _pa()
        import pyarrow.csv as pcsv

        if follow and not self.utf8:
            raise InputUsageError("--follow reads UTF-8 input; convert it first (iconv)")
        blocks = self._timed_blocks(follow)
        carry = b""
        header = None
        for data in blocks:
            carry += data
            nl = carry.find(b"\n")
            if nl < 0:
                if len(carry) > self.max_line_bytes:
                    raise self._too_long()
                continue
            header, carry = carry[: nl + 1], carry[nl + 1 :]
            break
        if header is None:
            header, carry = carry, b""
        if self.utf8 and header.startswith(_BOM):
            header = header[3:]
        if not header.strip():
            raise InputError(f"{self.where()} is empty (no CSV header row)" if not self.no_header
                             else f"{self.where()} has no items")
        fields = self._header_fields(header)
        if self.no_header:
            picked = [self._field(len(fields), "--column", self.col_index or 0),
                      self._field(len(fields), "--time-column", _field_index("--time-column", time_column))]
            carry = header + carry
        else:
            names_in_file = [h.strip() for h in fields]
            if time_column not in names_in_file:
                raise InputUsageError(f"no column {time_column!r} (--time-column) in {self.where()}; "
                                      f"its columns are {_names(names_in_file)}")
            picked = [self._pick_column(names_in_file), names_in_file.index(time_column)]
        if self.privacy_id is not None:
            picked.append(self._field(len(fields), "--privacy-id", self.id_index) if self.no_header
                          else self._pick_id_column([h.strip() for h in fields]))
        if len(set(picked)) != len(picked):
            raise InputUsageError("--time-column must name another column than the items' --column and --privacy-id")
        names = [f"f{i}" for i in range(len(fields))]
        wanted = [names[i] for i in picked]
        # Under skip and replace every bad row is decided on its own bytes (as for _csv_batches):
        # rows longer than max_line_bytes are dropped before Arrow sees them (_LongRowFilter), a
        # row with the wrong number of fields is skipped by the parser, and ill-formed UTF-8 is
        # handled cell by cell (_checked_utf8). A windowed run then never stops on a row: with
        # --follow a stop would cut the series short and its time would tell when the row came.
        lenient = self.on_bad_line != "error"
        # a row of max_line_bytes and its "\r\n" fit one block
        read_options = pcsv.ReadOptions(column_names=names, use_threads=True,
                                        block_size=max(self.max_line_bytes + 2, 1 << 16))
        convert_options = pcsv.ConvertOptions(include_columns=wanted,
                                              column_types={n: pa.large_string() for n in wanted},
                                              strings_can_be_null=False, quoted_strings_can_be_null=False,
                                              check_utf8=not lenient)

        int_times = pcsv.ConvertOptions(include_columns=wanted,
                                        column_types={n: pa.int64() if n == wanted[1] else pa.large_string()
                                                      for n in wanted},
                                        strings_can_be_null=False, quoted_strings_can_be_null=False,
                                        check_utf8=not lenient)

        def parse_options(bad):
            """Arrow's parse options; under skip/replace a malformed row is skipped and noted in ``bad``
            (counted once the block's parse is the one kept)."""
            if not lenient:
                return pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=False)
            return pcsv.ParseOptions(delimiter=self.delimiter, newlines_in_values=False,
                                     invalid_row_handler=lambda row: bad.append(1) or "skip")

        def read(block, options, bad):
            try:
                return pcsv.read_csv(pa.py_buffer(block), read_options=read_options,
                                     parse_options=parse_options(bad), convert_options=options)
            except pa.ArrowInvalid as exc:
                if "Empty CSV" in str(exc):
                    return None
                raise InputError(self._csv_message(exc)) from None

        def parse(block, hex_prefix):
            # Epoch seconds as integers, the common case, parse in C++. Any other value makes the
            # block fail there and the block is read again as text, each time on its own; both
            # read a decimal integer alike, and a block with "0x" (which Arrow would read as hex)
            # goes to the text path, so a row's time never depends on the other rows.
            table, int_column, bad = None, not hex_prefix, []
            if int_column:
                try:
                    table = pcsv.read_csv(pa.py_buffer(block), read_options=read_options,
                                          parse_options=parse_options(bad), convert_options=int_times)
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    int_column, bad = False, []
            if not int_column:
                table = read(block, convert_options, bad)
            if bad:
                with self._counting:
                    self.bad_lines += len(bad)
            if table is None:
                return
            for batch in table.select(wanted).to_batches():
                if lenient:
                    batch = self._checked_utf8(batch, 0)
                if batch.num_rows:
                    yield from converted(int_column, *batch.columns)

        def converted(int_column, items_col, times_col, ids_col=None):
            items, items_nonempty = _trim(items_col)
            ids, ids_nonempty = (None, None) if ids_col is None else _trim(ids_col)
            if int_column:
                secs = _values(times_col.fill_null(0)) if times_col.null_count else _values(times_col)
                usable = _values(times_col.is_valid()) if times_col.null_count else None
                usable = _both(usable, np.abs(np.where(usable, secs, 0) if usable is not None else secs)
                               < _MAX_EPOCH_SECONDS)
                texts = None
            else:
                texts, usable = _trim(times_col)
            both = _both(_both(items_nonempty, usable), ids_nonempty)
            if both is not None and not both.all():
                items = _take(items, both)
                ids = None if ids is None else _take(ids, both)
                if int_column:
                    secs = secs[both]
                else:
                    texts = _take(texts, both)
            if not len(items):
                return
            converted_columns = [self.keys.convert_kept(items)]
            if int_column:
                converted_columns.append((secs * 1_000_000_000, None))  # |secs| < 2^62/10^9: no overflow
            else:
                converted_columns.append(_event_times(texts))
            if ids is not None:
                converted_columns.append(self.ids.convert_kept(ids))
            out = _aligned_columns(converted_columns)
            if len(out[0]):
                out[1] = out[1].view("datetime64[ns]")
                yield tuple(out)

        def complete_lines(last, data=b""):
            nonlocal carry
            cut = len(data) if last else data.rfind(b"\n") + 1
            if cut <= 0:
                carry += data
                if len(carry) > self.max_line_bytes:
                    raise self._too_long()
                return
            view = memoryview(data)[:cut]
            carry_before = carry
            block = b"".join((carry, view)) if carry else view
            carry = data[cut:]
            # memchr finds no "x" in most blocks; only a block with one needs the vectorised look
            maybe = any(buf.find(x) >= 0 for buf in (carry_before, data) for x in (b"x", b"X"))
            yield from parse(block, maybe and _hex_prefix(block))

        data, carry = carry, b""
        if lenient:
            data, blocks = b"", _short_lines(data, blocks, self.max_line_bytes, self._count_bad)
        yield from complete_lines(False, data)
        for data in blocks:
            yield from complete_lines(False, data)
        if carry.strip():
            data, carry = carry, b""
            yield from complete_lines(True, data)
