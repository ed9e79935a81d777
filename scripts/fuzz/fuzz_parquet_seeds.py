#!/usr/bin/env python3
"""Writes the Parquet harness's chunk-mode seeds: each real writer's file cut to its column chunks (what lies between
the leading magic and the footer), behind the two bytes that choose the harness's column (that of the file's first
column) and codec.

    scripts/fuzz/fuzz_parquet_seeds.py OUTPUT_DIRECTORY FILE...

The first column chunk is then read as written; the chunks after it, other columns' pages, are the mutations a
real file already holds. The file's column and codec are known from its name (scripts/fixtures/make_parquet_fixtures.py's
names); files of other names are skipped. No Parquet library: the footer's length is in the last 8 bytes.
"""
import os
import struct
import sys

# The harness's columns (Fuzz/Parquet/main.swift): 1 optional STRING, 3 optional BOOLEAN, 10 optional INT64,
# 12 optional INT32, 2 optional list<list<double>>.
FIRST_COLUMN = [("laion", 1), ("datacomp", 1), ("small", 1), ("unselected", 1), ("coyo", 10), ("delta-ints", 10),
                ("types-int96", 6), ("types-decimal", 12), ("types", 3), ("nested", 12)]
CODECS = [("none", 0), ("snappy", 1), ("gzip", 2), ("brotli", 4), ("zstd", 6), ("lz4", 7), ("polars", 6),
          ("duckdb-v1", 1), ("duckdb-v2", 6), ("nested", 6), ("types-int96", 2), ("types", 1), ("small", 1),
          ("delta-ints-v1", 1), ("delta-ints-v2", 0), ("unselected", 0)]


def pick(name, table):
    for prefix, value in table:
        if prefix in name:
            return value
    return None


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        name = os.path.basename(path)
        column = next((value for prefix, value in FIRST_COLUMN if name.startswith(prefix)), None)
        codec = pick(name, CODECS)
        if column is None or codec is None:
            continue
        data = open(path, "rb").read()
        if len(data) < 12 or data[:4] != b"PAR1":
            continue
        footer = struct.unpack("<I", data[-8:-4])[0]
        chunks = data[4 : len(data) - 8 - footer]
        with open(os.path.join(out, "chunk-" + name), "wb") as f:
            f.write(bytes([column, codec]) + chunks[:65534])


if __name__ == "__main__":
    main()
