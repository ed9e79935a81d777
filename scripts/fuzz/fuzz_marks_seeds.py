#!/usr/bin/env python3
"""Seeds for `scripts/fuzz/fuzz marks`: every consent sample whole, and the payloads the mark readers take, cut out of them.

    scripts/fuzz/fuzz_marks_seeds.py OUT_DIR SAMPLE...

Each seed is the harness's selector byte then its input (Fuzz/Marks/main.swift): 0 an XMP packet (JPEG APP1, the
JPEG extended XMP reassembled, PNG iTXt, WebP `XMP `, GIF `XMP DataXMP` without its magic trailer), 1 a JUMBF manifest
store (JPEG APP11 reassembled by sequence number without the repeated superbox headers, PNG caBX, WebP C2PA, GIF
C2PA_GIF sub-blocks joined), 2 the content of every `cbor` box in a store, 3 the whole file. Written into OUT_DIR
(scripts/fuzz/fuzz's seed folder under .build-fuzz), never into the repository.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # scripts/lib: mirrorscripts
from mirrorscripts import NotWellFormed, jpeg_segments, png_chunks, webp_chunks  # noqa: E402


def jpeg(data):
    packets, stores, extended, instances = [], [], {}, {}
    for marker, _, body in jpeg_segments(data):
        if marker == 0xE1 and body.startswith(b"http://ns.adobe.com/xap/1.0/\0"):
            packets.append(body[29:])
        elif marker == 0xE1 and body.startswith(b"http://ns.adobe.com/xmp/extension/\0"):
            chunk = body[35:]
            offset = struct.unpack(">I", chunk[36:40])[0]
            extended.setdefault(chunk[:32], []).append((offset, chunk[40:]))
        elif marker == 0xEB and body.startswith(b"JP") and len(body) >= 16:
            instances.setdefault(body[2:4], []).append((struct.unpack(">I", body[4:8])[0], body[8:]))
    for chunks in extended.values():
        packets.append(b"".join(chunk for _, chunk in sorted(chunks)))
    for segments in instances.values():
        segments.sort()
        first = segments[0][1]
        header = 16 if struct.unpack(">I", first[:4])[0] == 1 else 8
        stores.append(first + b"".join(data[header:] for _, data in segments[1:]))
    return packets, stores


def png(data):
    packets, stores = [], []
    for kind, body in png_chunks(data):
        if kind == b"iTXt" and body.startswith(b"XML:com.adobe.xmp\0") and body[18] == 0:
            rest = body[20:]
            rest = rest[rest.index(b"\0") + 1:]
            packets.append(rest[rest.index(b"\0") + 1:])
        elif kind == b"caBX":
            stores.append(body)
    return packets, stores


def webp(data):
    packets, stores = [], []
    for kind, body in webp_chunks(data):
        if kind == b"XMP ":
            packets.append(body)
        elif kind == b"C2PA":
            stores.append(body)
    return packets, stores


def gif(data):
    packets, stores = [], []
    offset = data.find(b"\x21\xff\x0bXMP DataXMP")
    if offset >= 0:
        end = data.find(b"\x01\xff\xfe\xfd", offset)
        if end > 0:
            packets.append(data[offset + 14:end])
    offset = data.find(b"\x21\xff\x0bC2PA_GIF")
    if offset >= 0:
        offset += 14
        store = b""
        while offset < len(data) and data[offset]:
            store += data[offset + 1:offset + 1 + data[offset]]
            offset += 1 + data[offset]
        stores.append(store)
    return packets, stores


def cbor_boxes(store, depth=0):
    offset = 0
    while offset + 8 <= len(store) and depth < 16:
        length, kind = struct.unpack(">I4s", store[offset:offset + 8])
        if length < 8 or offset + length > len(store):
            return
        if kind == b"jumb":
            yield from cbor_boxes(store[offset + 8:offset + length], depth + 1)
        elif kind == b"cbor":
            yield store[offset + 8:offset + length]
        offset += length


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        data = open(path, "rb").read()
        name = os.path.basename(path)
        readers = {b"\xff\xd8": jpeg, b"\x89P": png, b"RI": webp, b"GI": gif}
        try:
            packets, stores = readers.get(data[:2], lambda _: ([], []))(data)
        except NotWellFormed:  # not the container its first bytes say: the whole file is still a seed
            packets, stores = [], []
        seeds = [(3, "file", data)]
        seeds += [(0, f"xmp{index}", packet) for index, packet in enumerate(packets)]
        seeds += [(1, f"jumbf{index}", store) for index, store in enumerate(stores)]
        seeds += [(2, f"cbor{index}-{number}", box) for index, store in enumerate(stores)
                  for number, box in enumerate(cbor_boxes(store))]
        for selector, kind, payload in seeds:
            with open(os.path.join(out, f"{selector:02x}-{kind}-{name}"), "wb") as seed:
                seed.write(bytes([selector]) + payload)


if __name__ == "__main__":
    main()
