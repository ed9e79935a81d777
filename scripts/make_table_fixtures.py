"""Writes the Parquet tables the end-to-end tests of `mirror urls` read (Tests/mirrorTests/Tables/), with pyarrow, the
writer LAION and DataComp publish theirs with. Their URLs point at `http://images.test/…`, which the tests send to the
loopback server with --connect-to. Run in a throw-away virtualenv with pyarrow:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install pyarrow && /tmp/venv/bin/python scripts/make_table_fixtures.py
"""
import hashlib
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

out = pathlib.Path(__file__).resolve().parent.parent / "Tests" / "mirrorTests" / "Tables"
out.mkdir(parents=True, exist_ok=True)

# LAION's columns (URL, TEXT, WIDTH, HEIGHT, similarity, hash, punsafe, pwatermark), 12 rows in row groups of 5, snappy:
# rows 0-9 images, row 10 no URL, row 11 an ftp URL.
urls = [f"http://images.test/{index}.png" for index in range(10)] + [None, "ftp://images.test/x.png"]
laion = pa.table({
    "URL": pa.array(urls, pa.string()),
    "TEXT": pa.array([f"caption {index} — café" for index in range(12)], pa.string()),
    "WIDTH": pa.array([20 + index for index in range(12)], pa.int64()),
    "HEIGHT": pa.array([20] * 12, pa.int64()),
    "similarity": pa.array([0.25 + index / 100 for index in range(12)], pa.float64()),
    "hash": pa.array([index * 7919 - 3 for index in range(12)], pa.int64()),
    "punsafe": pa.array([0.01] * 12, pa.float32()),
    "pwatermark": pa.array([None] + [0.1] * 11, pa.float32()),
})
pq.write_table(laion, out / "laion-part.parquet", row_group_size=5, compression="snappy")

# The same table split in two files of a folder (a LAION part is one of many): keys continue across them.
folder = out / "laion-folder"
folder.mkdir(exist_ok=True)
pq.write_table(laion.slice(0, 6), folder / "part-00000.parquet", compression="zstd")
pq.write_table(laion.slice(6), folder / "part-00001.parquet", compression="gzip", data_page_version="2.0")

# DataComp's columns (uid, url, text, original_width, original_height, sha256, face_bboxes): row 0 a face to blur, row 1
# a digest no served image has, row 2 no boxes and no digest, row 3 boxes that are not a list of four numbers.
datacomp = pa.table({
    "uid": pa.array([f"{index:032x}" for index in range(4)], pa.string()),
    "url": pa.array([f"http://images.test/{index}.png" for index in range(4)], pa.string()),
    "text": pa.array([f"datacomp {index}" for index in range(4)], pa.string()),
    "original_width": pa.array([20, 21, 22, 23], pa.int64()),
    "original_height": pa.array([20, 20, 20, 20], pa.int64()),
    "sha256": pa.array(["", hashlib.sha256(b"not the image").hexdigest(), None, ""], pa.string()),
    "face_bboxes": pa.array([[[0.1, 0.1, 0.6, 0.6]], [], None, [[0.5, 0.5]]], pa.list_(pa.list_(pa.float64()))),
})
pq.write_table(datacomp, out / "datacomp-part.parquet", compression="zstd")
