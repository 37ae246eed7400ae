"""The Parquet and Arrow IPC readers: one record batch at a time, only the columns asked for, typed
by the schema (an integer column gives integer keys, a uint64 one text keys; quantiles need a numeric
column). A mixin of :class:`dpsketch.io.input.Source`."""

from __future__ import annotations

import sys

import numpy as np

from .streams import Plumbing, InputError, InputUsageError, _aligned, _pa, first_line
from .values import _INT64_MAX, _lenient_ints


class ColumnarReader(Plumbing):
    def parquet_file(self):
        pa, _ = _pa()
        import pyarrow.parquet as pq

        source = pa.BufferReader(sys.stdin.buffer.read()) if self.path == "-" else self.path
        try:
            return pq.ParquetFile(source)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(f"cannot read {self.where()} as Parquet: {first_line(exc)}") from None

    def parquet_rows(self) -> int:
        return self.parquet_file().metadata.num_rows

    def _parquet_read(self, pf, columns):
        """Record batches of the named columns, chunk_size rows each (dictionaries decoded)."""
        pa, _ = _pa()
        self.total, self.unit = pf.metadata.num_rows, " rows"
        rows = 0
        self._pos = lambda: rows
        try:
            for batch in pf.iter_batches(batch_size=self.chunk_size, columns=columns):
                rows += batch.num_rows
                yield [arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr
                       for arr in batch.columns]
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"cannot read {self.where()} as Parquet: {first_line(exc)}") from None

    def _columnar(self):
        """(schema, read) of a Parquet file or an Arrow IPC input: ``read(columns)`` yields the
        record batches of those columns as lists of arrays, dictionaries decoded."""
        if self.format == "parquet":
            pf = self.parquet_file()
            return pf.schema_arrow, lambda columns: self._parquet_read(pf, columns)
        reader, owned = self._arrow_reader()
        return reader.schema, lambda columns: self._arrow_read(reader, owned, columns)

    def _arrow_reader(self):
        """(reader, file to close or None): the Arrow IPC file format (random access; a file
        starting with ARROW1) or the stream format (a file or stdin, gzip detected as for text)."""
        pa, _ = _pa()
        import pyarrow.ipc as ipc

        try:
            if self.path != "-":
                with open(self.path, "rb") as f:
                    is_file_format = f.read(6) == b"ARROW1"
                if is_file_format:
                    src = pa.memory_map(self.path, "r")
                    return ipc.open_file(src), src
            stream, owned = self._open_bytes()
            try:
                return ipc.open_stream(stream), owned
            except BaseException:
                if owned is not None:
                    owned.close()
                raise
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(f"cannot read {self.where()} as an Arrow IPC stream or file: {first_line(exc)}") from None

    def _arrow_read(self, reader, owned, columns):
        """Record batches of the named columns, at most chunk_size rows each (slices of the
        writer's batches: no copy)."""
        pa, _ = _pa()
        rows = 0
        self.unit = " rows"
        self._pos = lambda: rows
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        try:
            for batch in batches:
                batch = batch.select(columns)
                for start in range(0, batch.num_rows, self.chunk_size):
                    part = batch.slice(start, self.chunk_size)
                    rows += part.num_rows
                    yield [arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr
                           for arr in part.columns]
        except pa.ArrowException as exc:
            raise InputError(f"cannot read {self.where()} as an Arrow IPC stream or file: {first_line(exc)}") from None
        finally:
            if owned is not None:
                owned.close()

    def _parquet_chunks(self):
        _, pc = _pa()
        schema, read = self._columnar()
        name = schema.names[self._pick_column(list(schema.names))]
        convert = _parquet_typing(schema, name, self.keys, "items")
        for (arr,) in read([name]):
            if arr.null_count:
                self.skipped += arr.null_count
                arr = pc.drop_null(arr)
            if len(arr):
                keys, _ = convert(arr)
                if len(keys):
                    yield keys

    def _parquet_pairs(self):
        pa, pc = _pa()
        schema, read = self._columnar()
        names = list(schema.names)
        key_name, id_name = names[self._pick_column(names)], names[self._pick_id_column(names)]
        convert_key = _parquet_typing(schema, key_name, self.keys, "items")
        convert_id = _parquet_typing(schema, id_name, self.ids, "privacy ids")
        for keys, ids in read([key_name, id_name]):
            if keys.null_count or ids.null_count:
                both = pc.and_(keys.is_valid(), ids.is_valid())
                keys, ids = keys.filter(both), ids.filter(both)
            if len(keys):
                keys, ids = _aligned(*convert_key(keys), *convert_id(ids))
            if len(keys):
                yield keys, ids

    def _parquet_numbers(self, integer, bits):
        schema, read = self._columnar()
        name = schema.names[self._pick_column(list(schema.names))]
        convert = _parquet_number_typing(schema, name, integer, bits)
        for (arr,) in read([name]):
            values, _ = convert(arr)
            yield values

    def _parquet_number_pairs(self, integer, bits):
        pa, pc = _pa()
        schema, read = self._columnar()
        names = list(schema.names)
        value_name, id_name = names[self._pick_column(names)], names[self._pick_id_column(names)]
        convert_value = _parquet_number_typing(schema, value_name, integer, bits)
        convert_id = _parquet_typing(schema, id_name, self.ids, "privacy ids")
        for values, ids in read([value_name, id_name]):
            if ids.null_count:
                ids_valid = ids.is_valid()
                values, ids = values.filter(ids_valid), ids.filter(ids_valid)
            if len(ids):
                values, ids = _aligned(*convert_value(values), *convert_id(ids))
            if len(values):
                yield values, ids


def _parquet_typing(schema, name, typer, what):
    """Check a Parquet or Arrow column's type, settle ``typer`` on it (auto: the column type decides) and
    return the converter of its batches (no nulls) to (values, kept) as KeyTyper.convert_kept."""
    pa, pc = _pa()
    typ = schema.field(name).type
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    is_int = pa.types.is_integer(typ)
    is_str = (pa.types.is_string(typ) or pa.types.is_large_string(typ)
              or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)))
    if not (is_int or is_str):
        raise InputError(f"column {name!r} has type {typ}; only integer and string columns can be {what}")
    is_uint64 = pa.types.is_uint64(typ)
    mode = typer.mode
    if mode == "auto":
        # uint64 values may not fit int64 keys: text keeps every one of them
        mode = "int" if is_int and not is_uint64 else "str"
        typer.chosen = mode
        if is_uint64:
            typer.how += ": uint64 may exceed int64"

    def convert(arr):
        if is_str and not pa.types.is_large_string(arr.type):
            arr = arr.cast(pa.large_string())
        if mode == "str":
            return (arr.cast(pa.large_string()) if is_int else arr), None
        if is_str:
            return _lenient_ints(pc.utf8_trim_whitespace(arr))
        kept = None
        if is_uint64:  # int mode: values above the int64 range are dropped
            ok = pc.less_equal(arr, pa.scalar(_INT64_MAX, pa.uint64()))
            if not pc.all(ok).as_py():
                kept = ok.to_numpy(zero_copy_only=False)
                arr = arr.filter(ok)
        return np.asarray(arr.cast(pa.int64()).to_numpy()), kept

    return convert


def _parquet_number_typing(schema, name, integer, bits):
    """Check that a Parquet or Arrow column is numeric (in integer mode: of an integer type; the schema
    decides, not the values) and return the converter of its batches to (numbers, kept) as
    :func:`_numbers_kept`: nulls and NaNs dropped, integers clamped into [0, 2^bits) (as --bounds
    clamps real values)."""
    pa, pc = _pa()
    typ = schema.field(name).type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
        raise InputError(f"column {name!r} has type {typ}; quantiles need a numeric column")
    if integer and pa.types.is_floating(typ):
        raise InputUsageError(f"column {name!r} has type {typ}; --universe-bits without --bounds needs an "
                              "integer column (pass --bounds LO,HI for real values)")
    top = (1 << bits) - 1

    def convert(arr):
        ok = arr.is_valid() if pa.types.is_integer(typ) else pc.and_kleene(arr.is_valid(), pc.invert(pc.is_nan(arr)))
        ok = pc.fill_null(ok, False)
        kept = None
        if not pc.all(ok).as_py():
            kept = ok.to_numpy(zero_copy_only=False)
            arr = arr.filter(ok)
        v = arr.to_numpy(zero_copy_only=False)
        if integer:
            if v.dtype.kind == "i":
                v = np.maximum(v, 0)
            return np.ascontiguousarray(np.minimum(v.astype(np.uint64), np.uint64(top))), kept
        return v.astype(np.float64, copy=False), kept

    return convert

