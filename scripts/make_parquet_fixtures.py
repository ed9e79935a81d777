#!/usr/bin/env python3
"""Writes the Parquet test files of MirrorParquet with real writers, and what pyarrow reads from each.

    scripts/make_parquet_fixtures.py [output directory]

Default output: Tests/MirrorKitTests/Fixtures/parquet/. Run without pyarrow, polars and duckdb importable, the script
makes a throw-away virtualenv, installs the pinned versions below from PyPI into it and runs itself there.

For each `<name>.parquet` it writes `<name>.expected.jsonl`: a first line `{"columns": [...]}` naming the top-level
columns to read, then one JSON array per row, in file order, of what `pq.read_table(...)` reads, with the rendering
rules of `ParquetValue` (MirrorParquet): lists as JSON arrays, null as null, booleans and numbers as themselves (a
FLOAT widened to the double it is), strings as strings, binary as base64 strings, timestamps as ISO 8601 UTC strings
with as many fractional digits as their unit has (3, 6 or 9) and a `Z` (INT96 included), dates as YYYY-MM-DD, times
as HH:MM:SS.fff…, decimals as plain decimal strings with their scale's digits. JSON has no NaN or infinities: they
are written as the strings "NaN", "Infinity" and "-Infinity". A file the reader must refuse has a `<name>.error` with
a fragment of the one-line message instead (encryption); a file with columns the reader must refuse lists them in
`<name>.unsupported` (one a line) and leaves them out of the expected columns.

The shapes are those of the image-text datasets `mirror urls` reads: LAION (URL, TEXT, WIDTH, HEIGHT, similarity,
hash, punsafe, pwatermark), DataComp (uid, url, text, original_width, original_height, sha256, face_bboxes as
list<list<double>>) and COYO (id, url, text, sizes, phash, counts, CLIP similarities, scores), with synthetic values:
nulls, non-ASCII and empty text, characters JSON escapes, empty lists. Every codec × dictionary on and off × data page
v1 and v2, with many small row groups and small pages; DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY
and BYTE_STREAM_SPLIT; polars and DuckDB (both page versions); every physical and the common logical types; lists
nested three deep with nulls at each level; and the legacy list shapes no current writer makes (2-level lists, a
bare repeated field, a `_tuple` struct element), written by the small hand-made writer at the end of this file.
"""
import base64
import datetime
import decimal
import json
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

WIDE = decimal.Context(prec=60)  # 38 digits and more, where the default context rounds to 28
PINNED = ["pyarrow==26.0.1", "polars==2.1.0", "duckdb==2.0.1"]

try:
    import duckdb
    import polars as pl
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
except ImportError:
    if os.environ.get("MAKE_PARQUET_FIXTURES_VENV"):
        raise
    venv = os.path.join(tempfile.mkdtemp(), "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet", "--disable-pip-version-check", *PINNED],
                   check=True)
    os.environ["MAKE_PARQUET_FIXTURES_VENV"] = venv
    os.execv(os.path.join(venv, "bin", "python"), [os.path.join(venv, "bin", "python"), *sys.argv])

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "Tests", "MirrorKitTests", "Fixtures", "parquet")

# MARK: - Synthetic rows

WORDS = ["a", "photo", "of", "the", "cat", "on", "sofa", "red", "car", "mountain", "sunset", "beach", "dog", "vintage",
         "poster", "logo", "wedding", "dress", "kitchen", "Café", "naïve", "façade", "Größe", "東京", "夜景", "猫",
         "😀", "🏔️", "Привет", "мир", "مرحبا", "שלום", "한국어", "ñandú", "Ελλάδα"]
ODD = ["", " ", "quote \" and backslash \\", "tab\tand\nnewline", "\u00a0no-break\u2028line sep", "control \u0001 char",
       "x" * 300, "emoji only 👩‍👩‍👧‍👦🇯🇵"]


def text(rng, i):
    roll = rng.random()
    if roll < 0.08:
        return None
    if roll < 0.16:
        return ODD[i % len(ODD)]
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14)))


def url(rng, i, dataset):
    hosts = ["example.com", "img.example.org", "cdn.example.net", "xn--bcher-kva.example", "例え.example"]
    path = rng.choice(["images", "photos/2021", "i", "media/upload", "wp-content/uploads/2019/05"])
    name = rng.choice(["img", "photo", "DSC", "bild-größe", "%E7%8C%AB"])
    return f"https://{rng.choice(hosts)}/{path}/{name}_{dataset}_{i}.{rng.choice(['jpg', 'png', 'webp', 'jpeg'])}"


def maybe(rng, value, p=0.07):
    return None if rng.random() < p else value


def laion(n, seed=1):
    rng = random.Random(seed)
    rows = {k: [] for k in ["URL", "TEXT", "WIDTH", "HEIGHT", "similarity", "hash", "punsafe", "pwatermark"]}
    for i in range(n):
        rows["URL"].append(url(rng, i, "laion"))
        rows["TEXT"].append(text(rng, i))
        rows["WIDTH"].append(maybe(rng, rng.choice([256, 512, 640, 800, 1024, 1920, 4000, rng.randint(1, 8000)])))
        rows["HEIGHT"].append(maybe(rng, rng.randint(1, 6000)))
        rows["similarity"].append(rng.uniform(0.28, 0.45))
        rows["hash"].append(rng.randint(-2**63, 2**63 - 1))
        rows["punsafe"].append(maybe(rng, rng.random()))
        rows["pwatermark"].append(maybe(rng, rng.random()))
    schema = pa.schema([("URL", pa.string()), ("TEXT", pa.string()), ("WIDTH", pa.int64()), ("HEIGHT", pa.int64()),
                        ("similarity", pa.float64()), ("hash", pa.int64()), ("punsafe", pa.float32()),
                        ("pwatermark", pa.float32())])
    return pa.table(rows, schema=schema)


def datacomp(n, seed=2):
    rng = random.Random(seed)
    rows = {k: [] for k in ["uid", "url", "text", "original_width", "original_height", "sha256", "face_bboxes"]}
    for i in range(n):
        rows["uid"].append("%032x" % rng.getrandbits(128))
        rows["url"].append(url(rng, i, "datacomp"))
        rows["text"].append(text(rng, i))
        rows["original_width"].append(rng.randint(64, 5000))
        rows["original_height"].append(rng.randint(64, 5000))
        rows["sha256"].append("%064x" % rng.getrandbits(256))
        faces = rng.choice([0, 0, 0, 1, 1, 2, 3])
        boxes = [[round(rng.random(), rng.choice([2, 4, 17])) for _ in range(4)] for _ in range(faces)]
        rows["face_bboxes"].append(None if rng.random() < 0.05 else boxes)
    schema = pa.schema([("uid", pa.string()), ("url", pa.string()), ("text", pa.string()),
                        ("original_width", pa.int64()), ("original_height", pa.int64()), ("sha256", pa.string()),
                        ("face_bboxes", pa.list_(pa.list_(pa.float64())))])
    return pa.table(rows, schema=schema)


COYO_FLOATS = ["nsfw_score_opennsfw2", "nsfw_score_gantman", "watermark_score", "aesthetic_score_laion_v2"]


def coyo(n, seed=3):
    rng = random.Random(seed)
    names = ["id", "url", "text", "width", "height", "image_phash", "text_length", "word_count", "num_tokens_bert",
             "num_tokens_gpt", "num_faces", "clip_similarity_vitb32", "clip_similarity_vitl14", *COYO_FLOATS]
    rows = {k: [] for k in names}
    for i in range(n):
        caption = text(rng, i)
        rows["id"].append(rng.randint(0, 2**40))
        rows["url"].append(url(rng, i, "coyo"))
        rows["text"].append(caption)
        rows["width"].append(rng.randint(200, 4000))
        rows["height"].append(rng.randint(200, 4000))
        rows["image_phash"].append(maybe(rng, "%016x" % rng.getrandbits(64)))
        rows["text_length"].append(None if caption is None else len(caption))
        rows["word_count"].append(None if caption is None else len(caption.split()))
        rows["num_tokens_bert"].append(rng.randint(0, 77))
        rows["num_tokens_gpt"].append(rng.randint(0, 77))
        rows["num_faces"].append(rng.choice([0, 0, 1, 2, 5]))
        rows["clip_similarity_vitb32"].append(rng.uniform(0.1, 0.5))
        rows["clip_similarity_vitl14"].append(rng.uniform(0.1, 0.5))
        for name in COYO_FLOATS:
            rows[name].append(maybe(rng, rng.random() * (10 if name.startswith("aesthetic") else 1)))
    types = {"id": pa.int64(), "url": pa.string(), "text": pa.string(), "width": pa.int32(), "height": pa.int32(),
             "image_phash": pa.string(), "text_length": pa.int32(), "word_count": pa.int32(),
             "num_tokens_bert": pa.int32(), "num_tokens_gpt": pa.int32(), "num_faces": pa.int8(),
             "clip_similarity_vitb32": pa.float64(), "clip_similarity_vitl14": pa.float64(),
             **{name: pa.float32() for name in COYO_FLOATS}}
    return pa.table(rows, schema=pa.schema([(name, types[name]) for name in names]))


SHAPES = {"laion": laion, "datacomp": datacomp, "coyo": coyo}

# MARK: - Rendering what pyarrow reads


def iso_datetime(value, unit):
    """An epoch count in `unit` as ISO 8601 UTC with the unit's fractional digits."""
    per_second, digits = {"s": (1, 0), "ms": (1000, 3), "us": (10**6, 6), "ns": (10**9, 9)}[unit]
    seconds, fraction = divmod(value, per_second)
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    text_ = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if digits:
        text_ += "." + str(fraction).rjust(digits, "0")
    return text_ + "Z"


def iso_time(value, unit):
    per_second, digits = {"s": (1, 0), "ms": (1000, 3), "us": (10**6, 6), "ns": (10**9, 9)}[unit]
    seconds, fraction = divmod(value, per_second)
    text_ = "%02d:%02d:%02d" % (seconds // 3600, seconds // 60 % 60, seconds % 60)
    return text_ + ("." + str(fraction).rjust(digits, "0") if digits else "")


def render_scalar(value, kind):
    if value is None:
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [render_scalar(item, kind.value_type if kind is not None else None) for item in value]
    return value


def render_column(column):
    kind = column.type
    if pa.types.is_timestamp(kind):
        return [None if v is None else iso_datetime(v, kind.unit) for v in pc.cast(column, pa.int64()).to_pylist()]
    if pa.types.is_time(kind):
        integers = pc.cast(column, pa.int32() if kind.bit_width == 32 else pa.int64())
        return [None if v is None else iso_time(v, kind.unit) for v in integers.to_pylist()]
    if pa.types.is_fixed_size_binary(kind) and str(kind).startswith("extension"):
        raise ValueError("extension types are not rendered")
    return [render_scalar(v, kind) for v in column.to_pylist()]


def write_expected(path, columns=None, error=None, unsupported=()):
    stem = path[: -len(".parquet")]
    if error is not None:
        with open(stem + ".error", "w") as f:
            f.write(error + "\n")
        return
    table = pq.read_table(path)
    names = [name for name in table.column_names if name not in unsupported] if columns is None else columns
    rendered = [render_column(table.column(name)) for name in names]
    with open(stem + ".expected.jsonl", "w") as f:
        f.write(json.dumps({"columns": names}, ensure_ascii=False) + "\n")
        for row in zip(*rendered) if rendered else []:
            f.write(json.dumps(list(row), ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n")
    if unsupported:
        with open(stem + ".unsupported", "w") as f:
            f.write("".join(name + "\n" for name in unsupported))


def pyarrow_file(name, table, **options):
    path = os.path.join(OUT, name + ".parquet")
    pq.write_table(table, path, **options)
    write_expected(path)
    return path


# MARK: - The files


def codec_matrix():
    """Each codec × dictionary on and off × data page v1 and v2, over the three shapes in turn."""
    codecs = ["none", "snappy", "gzip", "zstd", "lz4", "brotli"]
    index = 0
    for codec in codecs:
        for dictionary in (True, False):
            for version in ("1.0", "2.0"):
                shape = list(SHAPES)[index % 3]
                index += 1
                table = SHAPES[shape](90, seed=index)
                name = "%s-%s-%s-v%s" % (shape, codec, "dict" if dictionary else "plain", version[0])
                pyarrow_file(name, table, compression=codec, use_dictionary=dictionary, data_page_version=version,
                             row_group_size=25, data_page_size=700, write_batch_size=16,
                             max_rows_per_page=None if index % 2 else 11)


def delta_encodings():
    table = laion(120, seed=10)
    encodings = {"URL": "DELTA_LENGTH_BYTE_ARRAY", "TEXT": "DELTA_BYTE_ARRAY", "WIDTH": "DELTA_BINARY_PACKED",
                 "HEIGHT": "DELTA_BINARY_PACKED", "hash": "DELTA_BINARY_PACKED", "similarity": "BYTE_STREAM_SPLIT",
                 "punsafe": "BYTE_STREAM_SPLIT", "pwatermark": "BYTE_STREAM_SPLIT"}
    for version in ("1.0", "2.0"):
        for codec in ("none", "zstd"):
            pyarrow_file("laion-delta-%s-v%s" % (codec, version[0]), table, compression=codec, use_dictionary=False,
                         column_encoding=encodings, data_page_version=version, row_group_size=50, data_page_size=600)
    # Longer runs for the delta blocks (several blocks and miniblocks, wide and zero bit widths, int32 and int64
    # extremes), BYTE_STREAM_SPLIT over INT32, INT64 and FIXED_LEN_BYTE_ARRAY, DELTA_BYTE_ARRAY over FLBA.
    rng = random.Random(11)
    n = 700
    ints = pa.table({
        "sorted64": pa.array(sorted(rng.randint(-10**12, 10**12) for _ in range(n)), pa.int64()),
        "wild64": pa.array([rng.choice([-2**63, 2**63 - 1, 0, rng.randint(-2**63, 2**63 - 1)]) for _ in range(n)],
                           pa.int64()),
        "wild32": pa.array([maybe(rng, rng.choice([-2**31, 2**31 - 1, 0, rng.randint(-2**31, 2**31 - 1)]), 0.1)
                            for _ in range(n)], pa.int32()),
        "constant32": pa.array([7] * n, pa.int32()),
        "bss32": pa.array([rng.randint(-2**31, 2**31 - 1) for _ in range(n)], pa.int32()),
        "bss64": pa.array([maybe(rng, rng.randint(-2**63, 2**63 - 1)) for _ in range(n)], pa.int64()),
        "bssfixed": pa.array([maybe(rng, rng.randbytes(5)) for _ in range(n)], pa.binary(5)),
        "deltafixed": pa.array([maybe(rng, b"pre" + rng.choice([b"aa", b"ab", b"zz"])) for _ in range(n)], pa.binary(5)),
        "prefixes": pa.array(["https://example.com/%s/%d" % (rng.choice(["a", "ab", "abc"]), i // 3) for i in range(n)]),
    })
    encodings = {"sorted64": "DELTA_BINARY_PACKED", "wild64": "DELTA_BINARY_PACKED", "wild32": "DELTA_BINARY_PACKED",
                 "constant32": "DELTA_BINARY_PACKED", "bss32": "BYTE_STREAM_SPLIT", "bss64": "BYTE_STREAM_SPLIT",
                 "bssfixed": "BYTE_STREAM_SPLIT", "deltafixed": "DELTA_BYTE_ARRAY", "prefixes": "DELTA_BYTE_ARRAY"}
    pyarrow_file("delta-ints-v1", ints, compression="snappy", use_dictionary=False, column_encoding=encodings,
                 row_group_size=400)
    pyarrow_file("delta-ints-v2", ints, compression="none", use_dictionary=False, column_encoding=encodings,
                 data_page_version="2.0", row_group_size=1000, data_page_size=1500)


def types_file():
    rng = random.Random(12)
    n = 60
    epoch_us = [rng.randint(-2 * 10**15, 4 * 10**15) for _ in range(n)]
    table = pa.table({
        "bool": pa.array([maybe(rng, rng.random() < 0.5) for _ in range(n)], pa.bool_()),
        "i8": pa.array([maybe(rng, rng.randint(-128, 127)) for _ in range(n)], pa.int8()),
        "i16": pa.array([rng.randint(-2**15, 2**15 - 1) for _ in range(n)], pa.int16()),
        "i32": pa.array([rng.randint(-2**31, 2**31 - 1) for _ in range(n)], pa.int32()),
        "i64": pa.array([rng.randint(-2**63, 2**63 - 1) for _ in range(n)], pa.int64()),
        "u8": pa.array([rng.randint(0, 255) for _ in range(n)], pa.uint8()),
        "u16": pa.array([rng.randint(0, 2**16 - 1) for _ in range(n)], pa.uint16()),
        "u32": pa.array([rng.choice([0, 2**32 - 1, rng.randint(0, 2**32 - 1)]) for _ in range(n)], pa.uint32()),
        "u64": pa.array([maybe(rng, rng.choice([0, 2**64 - 1, 2**63, rng.randint(0, 2**64 - 1)])) for _ in range(n)],
                        pa.uint64()),
        "f32": pa.array([rng.choice([0.1, -0.0, 1e-30, 3.4e38, float("nan"), float("inf"), rng.uniform(-1, 1)])
                         for _ in range(n)], pa.float32()),
        "f64": pa.array([maybe(rng, rng.choice([1e-300, -1e300, 5e-324, float("-inf"), rng.uniform(-1e6, 1e6)]))
                         for _ in range(n)], pa.float64()),
        "string": pa.array([text(rng, i) for i in range(n)], pa.string()),
        "large_string": pa.array([text(rng, i) for i in range(n)], pa.large_string()),
        "binary": pa.array([maybe(rng, rng.randbytes(rng.randint(0, 12))) for _ in range(n)], pa.binary()),
        "fixed": pa.array([maybe(rng, rng.randbytes(3)) for _ in range(n)], pa.binary(3)),
        "date": pa.array([maybe(rng, datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randint(-700000, 2900000)))
                          for _ in range(n)], pa.date32()),
        "ts_ms": pa.array([v // 1000 for v in epoch_us], pa.timestamp("ms")),
        "ts_us_utc": pa.array([maybe(rng, v) for v in epoch_us], pa.timestamp("us", tz="UTC")),
        "ts_ns": pa.array([v * 1000 + rng.randint(0, 999) for v in epoch_us[:n]], pa.timestamp("ns")),
        "time_ms": pa.array([rng.randint(0, 86_399_999) for _ in range(n)], pa.time32("ms")),
        "time_us": pa.array([maybe(rng, rng.randint(0, 86_399_999_999)) for _ in range(n)], pa.time64("us")),
        "dec_9_2": pa.array([maybe(rng, decimal.Decimal(rng.randint(-10**9 + 1, 10**9 - 1)).scaleb(-2, WIDE))
                             for _ in range(n)], pa.decimal128(9, 2)),
        "dec_18_0": pa.array([decimal.Decimal(rng.randint(-10**18 + 1, 10**18 - 1)) for _ in range(n)],
                             pa.decimal128(18, 0)),
        "dec_38_10": pa.array([decimal.Decimal(rng.choice([0, 1, -1, 10**38 - 1, -(10**38 - 1),
                                                          rng.randint(-10**38 + 1, 10**38 - 1)])).scaleb(-10, WIDE)
                               for _ in range(n)], pa.decimal128(38, 10)),
    })
    for version, dictionary in (("1.0", True), ("2.0", False)):
        pyarrow_file("types-%s-v%s" % ("dict" if dictionary else "plain", version[0]), table, compression="snappy",
                     use_dictionary=dictionary, data_page_version=version, row_group_size=23, data_page_size=300)
    # Decimals stored as INT32 and INT64 rather than FIXED_LEN_BYTE_ARRAY.
    decimals = table.select(["dec_9_2", "dec_18_0", "dec_38_10"])
    pyarrow_file("types-decimal-as-integer", decimals, store_decimal_as_integer=True, row_group_size=40)
    # INT96 timestamps (nanoseconds of the day, Julian day), as Spark and Impala write them.
    int96 = pa.table({"ts": pa.array([maybe(rng, v * 1000 + rng.randint(0, 999)) for v in epoch_us], pa.timestamp("ns")),
                      "caption": pa.array([text(rng, i) for i in range(n)])})
    pyarrow_file("types-int96", int96, use_deprecated_int96_timestamps=True, compression="gzip", row_group_size=17)


def nested_file():
    rng = random.Random(13)
    n = 80

    def inner(depth):
        roll = rng.random()
        if roll < 0.1:
            return None
        if roll < 0.2:
            return []
        if depth == 0:
            return [maybe(rng, rng.randint(-50, 50), 0.15) for _ in range(rng.randint(1, 3))]
        return [inner(depth - 1) for _ in range(rng.randint(1, 3))]

    table = pa.table({
        "row": pa.array(range(n), pa.int32()),
        "ints": pa.array([inner(0) for _ in range(n)], pa.list_(pa.int32())),
        "strings": pa.array([None if rng.random() < 0.1 else [maybe(rng, text(rng, j)) for j in range(rng.randint(0, 4))]
                             for _ in range(n)], pa.list_(pa.string())),
        "deep": pa.array([inner(2) for _ in range(n)], pa.list_(pa.list_(pa.list_(pa.int64())))),
        "required_lists": pa.array([[rng.random() for _ in range(rng.randint(0, 3))] for _ in range(n)],
                                   pa.list_(pa.field("item", pa.float64(), nullable=False))),
        "large": pa.array([inner(0) for _ in range(n)], pa.large_list(pa.int16())),
    }, schema=pa.schema([
        ("row", pa.int32()), ("ints", pa.list_(pa.int32())), ("strings", pa.list_(pa.string())),
        ("deep", pa.list_(pa.list_(pa.list_(pa.int64())))),
        pa.field("required_lists", pa.list_(pa.field("item", pa.float64(), nullable=False)), nullable=False),
        ("large", pa.large_list(pa.int16())),
    ]))
    for version, dictionary in (("1.0", True), ("2.0", False)):
        pyarrow_file("nested-%s-v%s" % ("dict" if dictionary else "plain", version[0]), table, compression="zstd",
                     use_dictionary=dictionary, data_page_version=version, row_group_size=30, data_page_size=200,
                     max_rows_per_page=7)
    # The old pyarrow layout: 3-level lists whose element is named `item` rather than `element`.
    pyarrow_file("nested-noncompliant", table, use_compliant_nested_type=False, row_group_size=50)
    # A struct and a map beside the lists: the reader refuses to read them, and still reads the others.
    extra = table.append_column("pair", pa.array([{"a": i, "b": str(i)} for i in range(n)],
                                                 pa.struct([("a", pa.int32()), ("b", pa.string())])))
    extra = extra.append_column("labels", pa.array([[("k%d" % i, i)] for i in range(n)], pa.map_(pa.string(), pa.int32())))
    path = os.path.join(OUT, "nested-struct-map.parquet")
    pq.write_table(extra, path, row_group_size=40)
    write_expected(path, unsupported=("pair", "labels"))


def other_writers():
    for shape, make in SHAPES.items():
        table = make(150, seed=20)
        frame = pl.from_arrow(table)
        path = os.path.join(OUT, "%s-polars.parquet" % shape)
        frame.write_parquet(path, row_group_size=40, data_page_size=1024)
        write_expected(path)
        for version in ("V1", "V2"):
            path = os.path.join(OUT, "%s-duckdb-%s.parquet" % (shape, version.lower()))
            connection = duckdb.connect()
            connection.register("source", table)
            connection.execute("COPY (SELECT * FROM source) TO '%s' (FORMAT PARQUET, ROW_GROUP_SIZE 64, "
                               "COMPRESSION %s, PARQUET_VERSION %s)" % (path, "zstd" if version == "V2" else "snappy",
                                                                       version))
            connection.close()
            write_expected(path)


def encrypted_files():
    import pyarrow.parquet.encryption as pe

    class ClearTextKms(pe.KmsClient):
        """Test keys only: wrapping is base64."""

        def __init__(self, config):
            pe.KmsClient.__init__(self)

        def wrap_key(self, key_bytes, master_key_identifier):
            return base64.b64encode(key_bytes)

        def unwrap_key(self, wrapped_key, master_key_identifier):
            return base64.b64decode(wrapped_key)

    factory = pe.CryptoFactory(lambda config: ClearTextKms(config))
    kms = pe.KmsConnectionConfig(custom_kms_conf={"footer": "0123456789012345", "col": "1234567890123450"})
    table = laion(20, seed=30)
    for plaintext, name in ((False, "encrypted-footer"), (True, "encrypted-plaintext-footer")):
        config = pe.EncryptionConfiguration(footer_key="footer", column_keys={"col": ["TEXT"]},
                                            plaintext_footer=plaintext)
        path = os.path.join(OUT, name + ".parquet")
        pq.write_table(table, path, encryption_properties=factory.file_encryption_properties(kms, config))
        write_expected(path, error="encrypt")


# MARK: - Legacy lists, by hand
#
# No writer here makes the list shapes older writers did (parquet-avro's 2-level lists, Thrift and protobuf's bare
# repeated fields), so this writes one uncompressed file with PLAIN values and RLE levels from the specification. pyarrow
# reads it; what it reads is the expected file.


class CompactWriter:
    """The Thrift compact protocol, the part a Parquet footer uses."""

    def __init__(self):
        self.out = bytearray()
        self.last = [0]

    def varint(self, value):
        while True:
            byte = value & 0x7F
            value >>= 7
            if value:
                self.out.append(byte | 0x80)
            else:
                self.out.append(byte)
                return

    def header(self, field, kind):
        delta = field - self.last[-1]
        if 0 < delta <= 15:
            self.out.append(delta << 4 | kind)
        else:
            self.out.append(kind)
            self.varint((field << 1) ^ (field >> 63))
        self.last[-1] = field

    def i32(self, field, value):
        self.header(field, 5)
        self.varint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)

    def i64(self, field, value):
        self.header(field, 6)
        self.varint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)

    def binary(self, field, value):
        self.header(field, 8)
        self.varint(len(value))
        self.out += value

    def struct(self, field, write):
        self.header(field, 12)
        self.last.append(0)
        write()
        self.out.append(0)
        self.last.pop()

    def list(self, field, kind, items, write):
        self.header(field, 9)
        self.out.append((len(items) << 4 | kind) if len(items) < 15 else (0xF0 | kind))
        if len(items) >= 15:
            self.varint(len(items))
        for item in items:
            if kind == 12:
                self.last.append(0)
                write(item)
                self.out.append(0)
                self.last.pop()
            else:
                write(item)


def rle_levels(levels, bit_width):
    """The RLE/bit-packing hybrid, runs only, with the 4-byte length of a v1 page."""
    out = bytearray()
    i = 0
    while i < len(levels):
        j = i
        while j < len(levels) and levels[j] == levels[i]:
            j += 1
        writer = CompactWriter()
        writer.varint((j - i) << 1)
        out += writer.out + levels[i].to_bytes((bit_width + 7) // 8, "little")
        i = j
    return struct.pack("<I", len(out)) + bytes(out)


def legacy_lists():
    # Each column: its schema elements under the root (name, type, repetition, converted type, children), the slots
    # of its values (top to leaf: nullable, the definition level at which it is present and, for a list, the
    # definition and repetition levels of its repeated field) and rows. Type codes: 1 INT32, 6 BYTE_ARRAY; repetition 0 required, 1 optional, 2 repeated; converted
    # 0 UTF8, 3 LIST.
    rows = [[1, 2, 3], [], None, [4], [5, 6]]
    nested_rows = [[[1, 2], [3]], [], None, [[]], [[4], [], [5, 6, 7]]]
    string_rows = [["a", None], None, [], ["b"], [None, "c", "é"]]
    columns = [
        ("two_level", [("two_level", None, 1, 3, 1), ("array", 1, 2, None, 0)],
         [(True, 1, 2, 1), (False, 2, None, None)], rows),
        ("two_level_nested", [("two_level_nested", None, 1, 3, 1), ("array", None, 2, 3, 1), ("array", 1, 2, None, 0)],
         [(True, 1, 2, 1), (False, 2, 3, 2), (False, 3, None, None)], nested_rows),
        ("bare_repeated", [("bare_repeated", 1, 2, None, 0)],
         [(False, 0, 1, 1), (False, 1, None, None)], [r if r is not None else [] for r in rows]),
        ("element_named", [("element_named", None, 1, 3, 1), ("element", None, 2, None, 1), ("str", 6, 1, 0, 0)],
         [(True, 1, 2, 1), (True, 3, None, None)], string_rows),
        ("pairs", [("pairs", None, 1, 3, 1), ("pairs_tuple", None, 2, None, 1), ("x", 1, 0, None, 0)],
         [(True, 1, 2, 1), (False, 2, None, None)], rows),
    ]

    def shred(slots, value, k, rep, out):
        nullable, defined, list_def, list_rep = slots[k]
        if value is None:
            assert nullable
            out.append((rep, defined - 1, None))
        elif list_def is None:
            out.append((rep, defined, value))
        elif not value:
            out.append((rep, list_def - 1, None))
        else:
            for index, item in enumerate(value):
                shred(slots, item, k + 1, rep if index == 0 else list_rep, out)

    body = bytearray(b"PAR1")
    chunks = []
    for name, elements, slots, values in columns:
        triplets = []
        for value in values:
            shred(slots, value, 0, 0, triplets)
        max_def = slots[-1][1]
        max_rep = max((slot[3] or 0) for slot in slots)
        page = bytearray()
        if max_rep:
            page += rle_levels([t[0] for t in triplets], max_rep.bit_length())
        if max_def:
            page += rle_levels([t[1] for t in triplets], max_def.bit_length())
        leaf_type = elements[-1][1]
        for _, level, value in triplets:
            if level == max_def:
                page += struct.pack("<i", value) if leaf_type == 1 else struct.pack("<I", len(value.encode())) + value.encode()
        header = CompactWriter()
        header.i32(1, 0)  # DATA_PAGE
        header.i32(2, len(page))
        header.i32(3, len(page))
        header.struct(5, lambda: (header.i32(1, len(triplets)), header.i32(2, 0), header.i32(3, 3), header.i32(4, 3)))
        header.out.append(0)  # the page header's stop field
        offset = len(body)
        body += header.out + page
        chunks.append((name, leaf_type, [e[0] for e in elements], offset, len(body) - offset, len(triplets)))

    footer = CompactWriter()
    footer.i32(1, 1)
    schema = [("schema", None, None, None, len(columns))] + [e for _, elements, _, _ in columns for e in elements]

    def element(e):
        name, kind, repetition, converted, children = e
        if kind is not None:
            footer.i32(1, kind)
        if repetition is not None:
            footer.i32(3, repetition)
        footer.binary(4, name.encode())
        if children:
            footer.i32(5, children)
        if converted is not None:
            footer.i32(6, converted)

    footer.list(2, 12, schema, element)
    footer.i64(3, len(rows))

    def row_group(_):
        def chunk(c):
            name, kind, path, offset, size, count = c
            footer.i64(2, offset)

            def meta():
                footer.i32(1, kind)
                footer.list(2, 5, [0, 3], lambda v: footer.varint(v << 1))
                footer.list(3, 8, path, lambda p: (footer.varint(len(p.encode())), footer.out.extend(p.encode())))
                footer.i32(4, 0)
                footer.i64(5, count)
                footer.i64(6, size)
                footer.i64(7, size)
                footer.i64(9, offset)

            footer.struct(3, meta)

        footer.list(1, 12, chunks, chunk)
        footer.i64(2, sum(c[4] for c in chunks))
        footer.i64(3, len(rows))

    footer.list(4, 12, [0], row_group)
    footer.binary(6, b"mirror make_parquet_fixtures.py (legacy lists by hand)")
    footer.out.append(0)
    body += footer.out + struct.pack("<I", len(footer.out)) + b"PAR1"
    path = os.path.join(OUT, "legacy-lists.parquet")
    with open(path, "wb") as f:
        f.write(body)
    write_expected(path, unsupported=("pairs",))


def small_files():
    """A small file with page checksums, for the truncation and byte-flip tests; and one whose unselected column
    is most of its bytes, for the test that only chosen columns are read."""
    rng = random.Random(40)
    n = 24
    small = pa.table({
        "url": [url(rng, i, "small") for i in range(n)],
        "caption": [text(rng, i) for i in range(n)],
        "width": pa.array([maybe(rng, rng.randint(1, 4000)) for _ in range(n)], pa.int32()),
        "score": pa.array([maybe(rng, rng.random()) for _ in range(n)], pa.float32()),
        "boxes": pa.array([None if i % 7 == 3 else [[rng.random() for _ in range(4)] for _ in range(i % 3)]
                           for i in range(n)], pa.list_(pa.list_(pa.float64()))),
    })
    pyarrow_file("small-checksums", small, compression="snappy", row_group_size=10, data_page_size=256,
                 write_page_checksum=True)
    blob = pa.table({
        "url": [url(rng, i, "blob") for i in range(40)],
        "caption": [text(rng, i) for i in range(40)],
        "blob": pa.array([rng.randbytes(4096) for _ in range(40)], pa.binary()),
    })
    path = os.path.join(OUT, "unselected-blob.parquet")
    pq.write_table(blob, path, compression="none", use_dictionary=False, row_group_size=20)
    write_expected(path, columns=["url", "caption"])  # the blobs' base64 would be larger than the file


def empty_files():
    """No rows: pyarrow writes one row group of empty chunks (a dictionary page, data page offset 0); polars and
    DuckDB write no row group."""
    table = pa.table({"url": pa.array([], pa.string()), "width": pa.array([], pa.int64()),
                      "face_bboxes": pa.array([], pa.list_(pa.list_(pa.float64())))})
    pyarrow_file("empty-pyarrow", table)
    path = os.path.join(OUT, "empty-polars.parquet")
    pl.from_arrow(table).write_parquet(path)
    write_expected(path)
    path = os.path.join(OUT, "empty-duckdb.parquet")
    connection = duckdb.connect()
    connection.register("source", table)
    connection.execute("COPY (SELECT * FROM source) TO '%s' (FORMAT PARQUET)" % path)
    connection.close()
    write_expected(path)


def main():
    os.makedirs(OUT, exist_ok=True)
    for entry in os.listdir(OUT):
        if entry.endswith((".parquet", ".jsonl", ".error", ".unsupported")):
            os.remove(os.path.join(OUT, entry))
    codec_matrix()
    delta_encodings()
    types_file()
    nested_file()
    other_writers()
    encrypted_files()
    legacy_lists()
    small_files()
    empty_files()
    total = sum(os.path.getsize(os.path.join(OUT, entry)) for entry in os.listdir(OUT))
    print("%d files, %d bytes in %s" % (len(os.listdir(OUT)), total, os.path.relpath(OUT, ROOT)))


if __name__ == "__main__":
    main()
