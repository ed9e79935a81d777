"""Test images that carry machine-readable AI/data-mining reservations and provenance marks, made only by the real
writers: Debian's exiftool 12.57 (IPTC/PLUS XMP: `plus:DataMining`, `Iptc4xmpExt:DigitalSourceType`) and the official
C2PA SDK's Python binding c2pa-python (C2PA manifests: `c2pa.training-mining`, `cawg.training-mining`, `c2pa.actions`).
Each file is read back with the same tools (`exiftool -n -j`, `c2pa.Reader`) and with the byte walkers below (JPEG
APP1/APP11 segments, PNG chunks, WebP chunks, GIF blocks, JUMBF boxes); any difference from what was meant fails the
run.

    /tmp/c2pa-venv/bin/python scripts/consent_samples.py Tests/MirrorImagesTests/Samples/Consent

writes the images and OUTDIR/samples.json (one object per file: what it declares, where, in which form). Needs
/usr/bin/exiftool (12.57) and a Python with `c2pa-python` (0.38) and `cryptography`; no network, no Pillow. The bases
are the small samples in Tests/MirrorImagesTests/Samples. The throw-away ES256 certificate chain is made afresh on each
run, so C2PA files differ from run to run (keys, manifest UUIDs, signatures); exiftool's output is byte-identical.
"""
import datetime
import hashlib
import json
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import c2pa
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

EXIFTOOL = "/usr/bin/exiftool"
BASES = Path(__file__).resolve().parent.parent / "Tests" / "MirrorImagesTests" / "Samples"
BASE = {"jpeg": "baseline.jpg", "png": "gray.png", "webp": "lossy.webp", "gif": "static.gif"}
MIME = {"jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp", "gif": "image/gif"}
EXT = {"jpeg": "jpg", "png": "png", "webp": "webp", "gif": "gif"}

PLUS_NS = "http://ns.useplus.org/ldf/xmp/1.0/"
IPTC_EXT_NS = "http://iptc.org/std/Iptc4xmpExt/2008-02-29/"
RDF_NS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
DMI = "http://ns.useplus.org/ldf/vocab/DMI-"
DST = "http://cv.iptc.org/newscodes/digitalsourcetype/"
XMP_APP1 = b"http://ns.adobe.com/xap/1.0/\0"
XMP_EXT_APP1 = b"http://ns.adobe.com/xmp/extension/\0"
GIF_XMP_ID = b"XMP DataXMP"
GIF_XMP_TRAILER = bytes([1]) + bytes(range(255, -1, -1)) + b"\0"  # 258 bytes: the "magic trailer" and the terminator
GIF_C2PA_ID = b"C2PA_GIF\x01\x00\x00"
JUMBF_C2PA_STORE = "6332706100110010800000aa00389b71"      # c2pa
JUMBF_C2PA_MANIFEST = "63326d6100110010800000aa00389b71"   # c2ma
JUMBF_ASSERTION_STORE = "6332617300110010800000aa00389b71"  # c2as

# exiftool 12.57 reads XMP-plus:DataMining (as an unknown tag) but cannot write it: these declare it in the PLUS table
# (Image::ExifTool::PLUS::XMP — there is no Image::ExifTool::XMP::plus table). `Resource => 1` makes exiftool write
# the value as `rdf:resource`, for DataMining and for the built-in Iptc4xmpExt:DigitalSourceType it overrides.
CONFIG_PLAIN = """%Image::ExifTool::UserDefined = (
    'Image::ExifTool::PLUS::XMP' => {
        DataMining => { },
    },
);
1;
"""
CONFIG_RESOURCE = """%Image::ExifTool::UserDefined = (
    'Image::ExifTool::PLUS::XMP' => {
        DataMining => { Resource => 1 },
    },
    'Image::ExifTool::XMP::iptcExt' => {
        DigitalSourceType => { Resource => 1 },
    },
);
1;
"""

# Settings for c2pa-rs: no thumbnail (keeps files small) unless a sample asks for one, and nothing fetched.
C2PA_VERIFY = {"verify": {"remote_manifest_fetch": False, "ocsp_fetch": False}}


class Mismatch(Exception):
    """What a file holds differs from what was meant to be written."""


# ---------------------------------------------------------------------------------------------------------------------
# What to make

def xmp_samples():
    """The exiftool-written samples: list of dicts (file, format, data_mining, digital_source_type, form, config,
    extra exiftool arguments, extended: None | 'extension' | 'main', note)."""
    samples = []

    def add(file, fmt, dm=None, dst=None, form="element", args=(), extended=None, note=""):
        samples.append({"file": file, "format": fmt, "data_mining": dm, "digital_source_type": dst, "form": form,
                        "args": list(args), "extended": extended, "note": note})

    where = {"jpeg": "JPEG APP1 http://ns.adobe.com/xap/1.0/", "png": "PNG iTXt XML:com.adobe.xmp before IDAT",
             "webp": "WebP 'XMP ' chunk after VP8 (exiftool adds VP8X with the XMP flag 0x04)",
             "gif": "GIF application extension XMP DataXMP (raw packet + 258-byte magic trailer) between the GCE and "
                    "the image descriptor"}
    for fmt in ("jpeg", "png", "webp", "gif"):
        add(f"xmp-dmi-prohibited-aimltraining.{EXT[fmt]}", fmt, dm=DMI + "PROHIBITED-AIMLTRAINING",
            note=f"XMP in {where[fmt]}; property as a child element with text (exiftool's default)")
    for value in ("PROHIBITED-GENAIMLTRAINING", "PROHIBITED", "PROHIBITED-SEECONSTRAINT",
                  "PROHIBITED-EXCEPTSEARCHENGINEINDEXING", "ALLOWED", "UNSPECIFIED"):
        add(f"xmp-dmi-{value.lower()}.jpg", "jpeg", dm=DMI + value, note=f"XMP in {where['jpeg']}; element form")
    add("xmp-dst-trainedalgorithmicmedia.jpg", "jpeg", dst=DST + "trainedAlgorithmicMedia",
        note=f"XMP in {where['jpeg']}; element form; generated by AI")
    add("xmp-dst-trainedalgorithmicmedia.png", "png", dst=DST + "trainedAlgorithmicMedia",
        note=f"XMP in {where['png']}; element form; generated by AI")
    add("xmp-dst-compositewithtrainedalgorithmicmedia.jpg", "jpeg", dst=DST + "compositeWithTrainedAlgorithmicMedia",
        note=f"XMP in {where['jpeg']}; element form; partly generated by AI")
    add("xmp-dst-digitalcapture.jpg", "jpeg", dst=DST + "digitalCapture",
        note=f"XMP in {where['jpeg']}; element form; a camera capture (not generated)")
    add("xmp-attribute-dmi-prohibited-aimltraining-dst-trained.jpg", "jpeg", dm=DMI + "PROHIBITED-AIMLTRAINING",
        dst=DST + "trainedAlgorithmicMedia", form="attribute", args=["-api", "Compact=Shorthand"],
        note="exiftool -api Compact=Shorthand: both properties as attributes of their rdf:Description "
             "(one rdf:Description per namespace, each self-closing)")
    add("xmp-attribute-onedesc-dmi-prohibited-genaimltraining-dst-composite.png", "png",
        dm=DMI + "PROHIBITED-GENAIMLTRAINING", dst=DST + "compositeWithTrainedAlgorithmicMedia", form="attribute",
        args=["-api", "Compact=Shorthand,OneDesc"],
        note="exiftool -api Compact=Shorthand,OneDesc: both properties as attributes of a single rdf:Description")
    add("xmp-resource-dmi-prohibited-aimltraining-dst-trained.jpg", "jpeg", dm=DMI + "PROHIBITED-AIMLTRAINING",
        dst=DST + "trainedAlgorithmicMedia", form="resource",
        note="exiftool with `Resource => 1` in the -config for both tags: empty elements with rdf:resource='URI'")
    add("xmp-resource-dmi-prohibited.gif", "gif", dm=DMI + "PROHIBITED", form="resource",
        note=f"XMP in {where['gif']}; rdf:resource form")
    # Extended XMP. exiftool puts each namespace in its own rdf:Description, moves any property over 10 kB into a
    # description of its own written last, and when the packet passes 65,502 bytes fills the main APP1 with the
    # smallest descriptions first and sends the rest to the extension.
    licence_tags = ("TermsAndConditionsText", "OtherConstraints", "OtherConditions", "OtherLicenseRequirements",
                    "LicensorNotes", "MediaConstraints", "RegionConstraints", "ProductOrServiceConstraints")
    add("xmp-extended-dmi-in-extension.jpg", "jpeg", dm=DMI + "PROHIBITED-AIMLTRAINING", extended="extension",
        args=["-XMP-dc:Title=Extended XMP sample"]
        + [f"-XMP-plus:{tag}={filler(tag, 9000)}" for tag in licence_tags],
        note="plus:DataMining shares its rdf:Description with eight 9,000-character PLUS licence texts; that "
             "description (~73 kB) cannot fit in the main packet, so exiftool moves it whole into the extended XMP; "
             "the main packet holds only xmpNote:HasExtendedXMP and dc:title")
    add("xmp-extended-dmi-in-main.jpg", "jpeg", dm=DMI + "PROHIBITED-AIMLTRAINING", extended="main",
        args=["-XMP-dc:Title=Extended XMP sample", f"-XMP-dc:Description={filler('description', 70000)}"],
        note="a 70,000-character dc:description goes to the extended XMP; "
             "plus:DataMining stays in the main packet beside xmpNote:HasExtendedXMP")
    add("xmp-dc-title-only.jpg", "jpeg", form=None, args=["-XMP-dc:Title=No reservation here"],
        note="ordinary XMP (dc:title only): neither property")
    return samples


def c2pa_samples():
    """The c2pa-python-signed samples: list of dicts (file, format, digital source type of the c2pa.created action,
    training-mining label and entries, claim version, thumbnail, multi-segment, XMP to write first, note)."""
    samples = []
    not_allowed = {e: {"use": "notAllowed"} for e in
                   ("c2pa.ai_training", "c2pa.ai_generative_training", "c2pa.data_mining", "c2pa.ai_inference")}

    def add(file, fmt, dst=DST + "digitalCapture", label=None, entries=None, claim_version=None, thumbnail=False,
            multi=False, xmp=None, note=""):
        samples.append({"file": file, "format": fmt, "dst": dst, "tm_label": label, "entries": entries,
                        "claim_version": claim_version, "thumbnail": thumbnail, "multi": multi, "xmp": xmp,
                        "note": note})

    for fmt in ("jpeg", "png", "webp", "gif"):
        add(f"c2pa-training-mining-notallowed.{EXT[fmt]}", fmt, label="c2pa.training-mining", entries=not_allowed,
            note="all four c2pa.* entries notAllowed; created action digitalCapture")
    add("c2pa-claimv1-training-mining-notallowed.jpg", "jpeg", label="c2pa.training-mining",
        entries={"c2pa.ai_training": {"use": "notAllowed"}}, claim_version=1,
        note="claim_version 1: manifest label urn:uuid:…, claim box c2pa.claim (the actions still go in as "
             "c2pa.actions.v2)")
    add("c2pa-cawg-ai-training-notallowed.jpg", "jpeg", label="cawg.training-mining",
        entries={"cawg.ai_training": {"use": "notAllowed"}}, note="CAWG label, one entry")
    add("c2pa-cawg-genai-training-constrained.jpg", "jpeg", label="cawg.training-mining",
        entries={"cawg.ai_generative_training": {"use": "constrained",
                                                 "constraint_info": "Licence required: https://example.com/licence"}},
        note="constrained, with constraint_info")
    add("c2pa-training-mining-allowed.jpg", "jpeg", label="c2pa.training-mining",
        entries={e: {"use": "allowed"} for e in not_allowed}, note="control: everything allowed")
    add("c2pa-cawg-training-mining-allowed.jpg", "jpeg", label="cawg.training-mining",
        entries={e.replace("c2pa.", "cawg."): {"use": "allowed"} for e in not_allowed},
        note="control: everything allowed (cawg.* entries)")
    for fmt in ("jpeg", "png"):
        add(f"c2pa-generated-trainedalgorithmicmedia.{EXT[fmt]}", fmt, dst=DST + "trainedAlgorithmicMedia",
            note="generated: c2pa.created with digitalSourceType trainedAlgorithmicMedia; no training-mining")
    add("c2pa-created-digitalcapture.jpg", "jpeg",
        note="control: a manifest with only a created action (digitalCapture); no reservation, not generated")
    add("c2pa-multisegment-training-mining-notallowed.jpg", "jpeg", label="c2pa.training-mining",
        entries=not_allowed, thumbnail=True, multi=True,
        note="store bulked up by the SDK's claim thumbnail and a custom org.mirror.test.padding assertion")
    add("c2pa-and-xmp-both-reserved.jpg", "jpeg", label="cawg.training-mining",
        entries={"cawg.ai_generative_training": {"use": "notAllowed"}},
        xmp={"dm": DMI + "PROHIBITED-GENAIMLTRAINING"},
        note="exiftool wrote the XMP first, then c2pa-python signed (APP11 store after APP0, XMP APP1 kept)")
    return samples


def filler(topic, length):
    """Deterministic prose-like text of exactly `length` characters (no XML specials)."""
    text, clause = "", 1
    while len(text) < length:
        text += f"Clause {clause}: the {topic} terms of this licence apply to every copy of the image. "
        clause += 1
    return text[:length].rstrip() + "." * (length - len(text[:length].rstrip()))


# ---------------------------------------------------------------------------------------------------------------------
# Writers

def exiftool(*args):
    """Runs exiftool with `args`; returns stdout as bytes; raises on failure or on any warning."""
    result = subprocess.run([EXIFTOOL, *args], capture_output=True)
    if result.returncode != 0 or b"Warning" in result.stderr or b"Error" in result.stderr:
        raise RuntimeError(f"exiftool {' '.join(a[:80] for a in args)}: {result.stderr.decode(errors='replace')}")
    return result.stdout


def write_xmp_sample(sample, out, configs):
    """Copies the base image of the sample's format to OUT and writes its XMP with exiftool."""
    path = out / sample["file"]
    shutil.copyfile(BASES / BASE[sample["format"]], path)
    config = configs["resource" if sample["form"] == "resource" else "plain"]
    args = ["-config", str(config), "-q", "-overwrite_original", *sample["args"]]
    if sample["data_mining"]:
        args.append(f"-XMP-plus:DataMining={sample['data_mining']}")
    if sample["digital_source_type"]:
        args.append(f"-XMP-iptcExt:DigitalSourceType={sample['digital_source_type']}")
    exiftool(*args, str(path))


def make_signer():
    """A throw-away ES256 chain (CA + signer) made with `cryptography`; returns a c2pa.Signer (no timestamp server).
    c2pa-rs 0.91 wants, on the signer certificate: keyUsage digitalSignature, an extendedKeyUsage it accepts
    (emailProtection works; it refuses serverAuth, and document signing / the C2PA EKU fail its post-sign check
    without a trust configuration), and an authorityKeyIdentifier."""
    now = datetime.datetime.now(datetime.timezone.utc)

    def name(common_name):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                          x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mirror consent samples")])

    def builder(subject, issuer, public_key):
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=365))
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False))

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (builder(name("mirror test CA"), name("mirror test CA"), ca_key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (builder(name("mirror test signer"), ca.subject, key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.EMAIL_PROTECTION]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    private_key = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    return c2pa.Signer.from_info(c2pa.C2paSignerInfo(c2pa.C2paSigningAlg.ES256, chain, private_key, None))


def c2pa_manifest(sample, padding=None):
    """The manifest definition for a C2PA sample (a c2pa.created action first, then the optional bulk, then the
    training-mining assertion)."""
    assertions = [{"label": "c2pa.actions",
                   "data": {"actions": [{"action": "c2pa.created", "digitalSourceType": sample["dst"]}]}}]
    if padding:
        assertions.append({"label": "org.mirror.test.padding",
                           "data": {"note": "bulk so that the manifest store needs several JPEG APP11 segments",
                                    "text": padding}})
    if sample["tm_label"]:
        assertions.append({"label": sample["tm_label"], "data": {"entries": sample["entries"]}})
    manifest = {"claim_generator_info": [{"name": "mirror consent_samples.py", "version": "1"}],
                "title": sample["file"], "format": MIME[sample["format"]], "assertions": assertions}
    if sample["claim_version"]:
        manifest["claim_version"] = sample["claim_version"]
    return manifest


def sign(sample, source, path, signer, padding=None):
    """Signs SOURCE into PATH with c2pa-python."""
    settings = {"builder": {"thumbnail": {"enabled": sample["thumbnail"]}}, **C2PA_VERIFY}
    context = c2pa.Context.from_dict(settings)
    builder = c2pa.Builder(c2pa_manifest(sample, padding), context)
    with open(source, "rb") as src, open(path, "w+b") as dst:
        builder.sign(signer, MIME[sample["format"]], src, dst)


def write_c2pa_sample(sample, out, signer, tmp):
    """Makes a C2PA sample: optional exiftool XMP first, then the signed manifest. For the multi-segment sample, tunes
    the padding so that the training-mining assertion's CBOR box straddles the boundary between the last two APP11
    segments (a reader that concatenates segments without dropping the repeated box header then misreads it)."""
    path = out / sample["file"]
    source = BASES / BASE[sample["format"]]
    if sample["xmp"]:
        staged = tmp / ("xmp-" + sample["file"])
        shutil.copyfile(source, staged)
        exiftool("-config", str(tmp / "plain.config"), "-q", "-overwrite_original",
                 f"-XMP-plus:DataMining={sample['xmp']['dm']}", str(staged))
        source = staged
    if not sample["multi"]:
        sign(sample, source, path, signer)
        return
    pieces, piece, first = 12, 9000, 9000   # ~108 kB of CBOR text: with the thumbnail, 3 APP11 segments
    for _ in range(4):
        padding = [filler("padding 0", first)] + [filler(f"padding {i}", piece) for i in range(1, pieces)]
        sign(sample, source, path, signer, padding)
        layout = jpeg_c2pa_layout(path.read_bytes())
        if layout is None or not layout["boundaries"]:
            raise RuntimeError("multi-segment sample: the store fits one APP11 segment")
        box, target = layout["boxes"][sample["tm_label"]], layout["boundaries"][-1]
        if box["content_start"] < target < box["content_end"]:
            return
        # shift the assertion by lengthening or shortening the first padding string, and sign again
        first += target - (box["content_start"] + box["content_end"]) // 2
    raise RuntimeError("multi-segment sample: could not place the training-mining box across a segment boundary")


# ---------------------------------------------------------------------------------------------------------------------
# Byte walkers (what a reader of these files has to do)

def jpeg_segments(data):
    """The marker segments of a JPEG up to SOS: list of (marker byte, offset of FF, payload after the length)."""
    if data[:2] != b"\xff\xd8":
        raise Mismatch("not a JPEG")
    segments, i = [], 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            raise Mismatch(f"no marker at {i}")
        marker = data[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        segments.append((marker, i, data[i + 4:i + 2 + length]))
        if marker == 0xDA:
            break
        i += 2 + length
    return segments


def jumbf_boxes(data, base=0):
    """Parses ISO BMFF-style boxes (as JUMBF uses them) in DATA: list of dicts type, start, end, header, children
    (for jumb), and for jumd: uuid, toggles, label."""
    boxes, i = [], 0
    while i + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[i:i + 8])
        header = 8
        if size == 1:
            size, header = struct.unpack(">Q", data[i + 8:i + 16])[0], 16
        elif size == 0:
            size = len(data) - i
        if size < header or i + size > len(data):
            raise Mismatch(f"bad JUMBF box at {base + i}")
        box = {"type": kind.decode("latin-1"), "start": base + i, "end": base + i + size, "header": header,
               "content_start": base + i + header, "content_end": base + i + size}
        body = data[i + header:i + size]
        if kind == b"jumb":
            box["children"] = jumbf_boxes(body, base + i + header)
        elif kind == b"jumd":
            box["uuid"], box["toggles"] = body[:16].hex(), body[16]
            box["label"] = body[17:].split(b"\0")[0].decode() if body[16] & 0x02 else None
        boxes.append(box)
        i += size
    return boxes


def jpeg_c2pa_layout(data):
    """Reassembles the JPEG's APP11 JUMBF segments (CI 'JP', instance En, sequence Z; continuation segments repeat the
    superbox's 8-byte header, dropped here); returns segments (count), boundaries (offsets in the reassembled store
    where segments 2… start), the store bytes and the labelled boxes of the active manifest's assertion store."""
    instances = {}
    for marker, _, payload in jpeg_segments(data):
        if marker == 0xEB and payload[:2] == b"JP":
            instance, sequence = struct.unpack(">HI", payload[2:8])
            instances.setdefault(instance, []).append((sequence, payload[8:]))
    if not instances:
        return None
    if len(instances) != 1:
        raise Mismatch(f"{len(instances)} JUMBF instances")
    parts = sorted(next(iter(instances.values())))
    if [p[0] for p in parts] != list(range(1, len(parts) + 1)):
        raise Mismatch("APP11 sequence numbers are not 1…N")
    first = parts[0][1]
    header_length = 16 if struct.unpack(">I", first[:4])[0] == 1 else 8
    store, boundaries = first, []
    for _, body in parts[1:]:
        if body[:header_length] != first[:header_length]:
            raise Mismatch("continuation APP11 segment does not repeat the box header")
        boundaries.append(len(store))
        store += body[header_length:]
    layout = c2pa_store_layout(store)
    layout.update(segments=len(parts), boundaries=boundaries, instance=next(iter(instances)))
    return layout


def c2pa_store_layout(store):
    """The assertion boxes of the active (last) manifest of a C2PA manifest store: dict with store, manifest label,
    claim label, assertion labels in order, and boxes (label -> the assertion's content box offsets)."""
    top = jumbf_boxes(store)
    if len(top) != 1 or top[0]["type"] != "jumb":
        raise Mismatch("store is not one jumb box")
    description, *manifests = top[0]["children"]
    if description["uuid"] != JUMBF_C2PA_STORE or description["label"] != "c2pa":
        raise Mismatch("store box is not labelled c2pa")
    manifest = manifests[-1]
    manifest_description, *parts = manifest["children"]
    if manifest_description["uuid"] != JUMBF_C2PA_MANIFEST:
        raise Mismatch("last manifest box has no c2ma UUID")
    assertion_store = [p for p in parts if p["children"][0]["uuid"] == JUMBF_ASSERTION_STORE]
    if len(assertion_store) != 1:
        raise Mismatch("no assertion store")
    labels, boxes = [], {}
    for assertion in assertion_store[0]["children"][1:]:
        label = assertion["children"][0]["label"]
        labels.append(label)
        content = assertion["children"][-1]
        boxes[label] = {"type": content["type"], "uuid": assertion["children"][0]["uuid"],
                        "content_start": content["content_start"], "content_end": content["content_end"]}
    claims = [p["children"][0]["label"] for p in parts if p["children"][0]["label"].startswith("c2pa.claim")]
    return {"store": store, "manifest_label": manifest_description["label"], "claim": claims[0] if claims else None,
            "labels": labels, "boxes": boxes}


def png_chunks(data):
    """(type, data) of each PNG chunk."""
    chunks, i = [], 8
    while i + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[i:i + 8])
        chunks.append((kind, data[i + 8:i + 8 + length]))
        i += 12 + length
    return chunks


def webp_chunks(data):
    """(fourcc, data) of each RIFF chunk of a WebP."""
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise Mismatch("not a WebP")
    chunks, i = [], 12
    while i + 8 <= len(data):
        kind, length = struct.unpack("<4sI", data[i:i + 8])
        chunks.append((kind, data[i + 8:i + 8 + length]))
        i += 8 + length + (length & 1)
    return chunks


def gif_blocks(data):
    """The blocks of a GIF: list of (kind, offset, end, application id or None, concatenated sub-block data)."""
    blocks, i = [], 13
    if data[10] & 0x80:
        i += 3 * (2 << (data[10] & 7))
    while i < len(data):
        introducer = data[i]
        if introducer == 0x3B:
            blocks.append(("trailer", i, i + 1, None, b""))
            break
        if introducer == 0x21:
            label, j = data[i + 1], i + 2
            app_id = None
            if label == 0xFF:
                app_id = data[j + 1:j + 1 + data[j]]
                j += 1 + data[j]
            payload = b""
            while data[j] != 0:
                payload += data[j + 1:j + 1 + data[j]]
                j += 1 + data[j]
            blocks.append((f"extension {label:#04x}", i, j + 1, app_id, payload))
            i = j + 1
        elif introducer == 0x2C:
            flags, j = data[i + 9], i + 10
            if flags & 0x80:
                j += 3 * (2 << (flags & 7))
            j += 1  # LZW minimum code size
            while data[j] != 0:
                j += 1 + data[j]
            blocks.append(("image", i, j + 1, None, b""))
            i = j + 1
        else:
            raise Mismatch(f"bad GIF block at {i}")
    return blocks


def xmp_packets(data, fmt):
    """Extracts the XMP of a file by walking its container: (main packet bytes or None, extended XMP bytes or None,
    number of extension segments)."""
    if fmt == "jpeg":
        main, chunks, guids = None, {}, set()
        for marker, _, payload in jpeg_segments(data):
            if marker == 0xE1 and payload.startswith(XMP_APP1):
                main = payload[len(XMP_APP1):]
            elif marker == 0xE1 and payload.startswith(XMP_EXT_APP1):
                body = payload[len(XMP_EXT_APP1):]
                guid, total, offset = body[:32], *struct.unpack(">II", body[32:40])
                guids.add((guid, total))
                chunks[offset] = body[40:]
        if not chunks:
            return main, None, 0
        if len(guids) != 1:
            raise Mismatch("extended XMP chunks with different GUIDs or lengths")
        (guid, total), = guids
        extended = b"".join(chunks[k] for k in sorted(chunks))
        if len(extended) != total:
            raise Mismatch("extended XMP chunks do not add up to the declared length")
        if hashlib.md5(extended).hexdigest().upper().encode() != guid or guid not in main:
            raise Mismatch("extended XMP GUID is not the MD5 of its data or is not named by HasExtendedXMP")
        return main, extended, len(chunks)
    if fmt == "png":
        for kind, body in png_chunks(data):
            if kind == b"iTXt" and body.startswith(b"XML:com.adobe.xmp\0"):
                rest = body[len(b"XML:com.adobe.xmp\0"):]
                if rest[0] != 0:
                    raise Mismatch("compressed iTXt XMP")
                rest = rest[2:]
                lang_end = rest.index(b"\0")
                translated_end = rest.index(b"\0", lang_end + 1)
                return rest[translated_end + 1:], None, 0
        return None, None, 0
    if fmt == "webp":
        for kind, body in webp_chunks(data):
            if kind == b"XMP ":
                return body, None, 0
        return None, None, 0
    if fmt == "gif":
        for kind, start, end, app_id, _ in gif_blocks(data):
            if app_id == GIF_XMP_ID:
                raw = data[start + 14:end]   # 21 FF 0B "XMP DataXMP", then the packet, raw, not in sub-blocks
                if not raw.endswith(GIF_XMP_TRAILER):
                    raise Mismatch("GIF XMP without the magic trailer")
                return raw[:-len(GIF_XMP_TRAILER)], None, 0
        return None, None, 0
    raise ValueError(fmt)


def c2pa_store_bytes(data, fmt):
    """The raw C2PA manifest store of a non-JPEG file (PNG caBX, WebP C2PA chunk, GIF C2PA_GIF extension)."""
    if fmt == "png":
        found = [body for kind, body in png_chunks(data) if kind == b"caBX"]
    elif fmt == "webp":
        found = [body for kind, body in webp_chunks(data) if kind == b"C2PA"]
    else:
        found = [payload for _, _, _, app_id, payload in gif_blocks(data) if app_id == GIF_C2PA_ID]
    return found[0] if found else None


def container_layout(data, fmt):
    """The order of the container's parts, for the record: JPEG segments up to SOS (APP1 and APP11 named by content),
    PNG chunks, WebP chunks, GIF blocks; repeats folded as NAME×N."""
    names = []
    if fmt == "jpeg":
        for marker, _, payload in jpeg_segments(data):
            name = {0xC0: "SOF0", 0xC4: "DHT", 0xDB: "DQT", 0xDA: "SOS", 0xDD: "DRI"}.get(marker, f"APP{marker - 0xE0}"
                                                                                          if 0xE0 <= marker <= 0xEF
                                                                                          else f"{marker:#04x}")
            if payload.startswith(XMP_APP1):
                name = "APP1(XMP)"
            elif payload.startswith(XMP_EXT_APP1):
                name = "APP1(ExtendedXMP)"
            elif marker == 0xEB and payload[:2] == b"JP":
                name = "APP11(JUMBF)"
            names.append(name)
        names = ["SOI"] + names
    elif fmt == "png":
        names = [kind.decode() for kind, _ in png_chunks(data)]
    elif fmt == "webp":
        names = [kind.decode().strip() or kind.decode() for kind, _ in webp_chunks(data)]
    else:
        label = {"extension 0xf9": "GCE", "extension 0xfe": "comment", "extension 0x01": "plain text"}
        for kind, _, _, app_id, _ in gif_blocks(data):
            names.append(f"app({app_id[:8].decode('latin-1')})" if app_id else label.get(kind, kind))
    folded = []
    for name in names:
        if folded and folded[-1][0] == name:
            folded[-1][1] += 1
        else:
            folded.append([name, 1])
    return " ".join(name if count == 1 else f"{name}×{count}" for name, count in folded)


def property_forms(packet):
    """How each of plus:DataMining and Iptc4xmpExt:DigitalSourceType sits in an XMP packet: dict name -> (form, value)
    with form 'attribute' | 'element' | 'resource'."""
    root = ET.fromstring(packet)   # the <?xpacket?> processing instructions around x:xmpmeta are well-formed XML
    found = {}
    for name, ns in (("DataMining", PLUS_NS), ("DigitalSourceType", IPTC_EXT_NS)):
        tag = f"{{{ns}}}{name}"
        for description in root.iter(f"{{{RDF_NS}}}Description"):
            if tag in description.attrib:
                found[name] = ("attribute", description.attrib[tag])
            for child in description.findall(tag):
                resource = child.attrib.get(f"{{{RDF_NS}}}resource")
                if resource is not None:
                    found[name] = ("resource", resource)
                else:
                    found[name] = ("element", (child.text or "").strip())
    return found


# ---------------------------------------------------------------------------------------------------------------------
# Reading back

def check(condition, file, message):
    """Raises Mismatch naming FILE unless CONDITION."""
    if not condition:
        raise Mismatch(f"{file}: {message}")


def read_exiftool(out, files):
    """exiftool -n -j of DataMining, DigitalSourceType, HasExtendedXMP and the image size for all FILES, by name."""
    output = exiftool("-n", "-j", "-XMP-plus:DataMining", "-XMP-iptcExt:DigitalSourceType",
                      "-XMP-xmpNote:HasExtendedXMP", "-ImageWidth", "-ImageHeight",
                      *[str(out / f) for f in files])
    return {Path(item["SourceFile"]).name: item for item in json.loads(output)}


def read_c2pa(path, fmt):
    """The active manifest read by c2pa.Reader, or None when the file has no manifest; raises when it does not
    validate (an untrusted signing certificate is expected: the chain is made up)."""
    with open(path, "rb") as stream:
        reader = c2pa.Reader.try_create(MIME[fmt], stream, None, c2pa.Context.from_dict(C2PA_VERIFY))
        if reader is None:
            return None
        with reader:
            state = reader.get_validation_state()
            report = json.loads(reader.json())
            failures = [s["code"] for s in report.get("validation_status", [])]
            if state not in ("Valid", "Trusted") or set(failures) - {"signingCredential.untrusted"}:
                raise Mismatch(f"{path.name}: C2PA validation {state} {failures}")
            return reader.get_active_manifest()


def verify_xmp_file(out, sample, tool):
    """Checks an exiftool-written file against its sample (exiftool's reading, the packet found by walking the
    container, the RDF form, where the property sits in extended XMP); returns the samples.json record."""
    file, fmt = sample["file"], sample["format"]
    data = (out / file).read_bytes()
    check(tool.get("DataMining") == sample["data_mining"], file, f"exiftool reads DataMining {tool.get('DataMining')}")
    check(tool.get("DigitalSourceType") == sample["digital_source_type"], file,
          f"exiftool reads DigitalSourceType {tool.get('DigitalSourceType')}")
    main, extended, extension_segments = xmp_packets(data, fmt)
    check(main is not None, file, "no XMP packet found by walking the container")
    check(main == exiftool("-xmp", "-b", str(out / file)), file, "the packet walked to differs from exiftool -xmp -b")
    forms = property_forms(main)
    in_extension = {}
    if extended is not None:
        in_extension = property_forms(extended)
        check(not set(forms) & set(in_extension), file, "a property in both the main and the extended packet")
        forms = {**forms, **in_extension}
    check(bool(tool.get("HasExtendedXMP")) == (sample["extended"] is not None), file, "HasExtendedXMP mismatch")
    if sample["extended"]:
        check(extended is not None, file, "no extended XMP")
        where = "extension" if "DataMining" in in_extension else "main"
        check(where == sample["extended"], file, f"DataMining is in the {where} packet, not the {sample['extended']}")
    expected = {name: (sample["form"], value) for name, value in
                (("DataMining", sample["data_mining"]), ("DigitalSourceType", sample["digital_source_type"])) if value}
    check(forms == expected, file, f"XMP holds {forms}, meant {expected}")
    check(read_c2pa(out / file, fmt) is None, file, "has a C2PA manifest")
    note = sample["note"]
    if extended is not None:
        note += f"; main APP1 packet {len(main)} bytes, extended XMP {len(extended)} bytes in {extension_segments} " \
                f"APP1 segments"
    return {"file": file, "format": fmt, "writer": "exiftool", "base": BASE[fmt],
            "width": tool.get("ImageWidth"), "height": tool.get("ImageHeight"),
            "data_mining": sample["data_mining"], "digital_source_type": sample["digital_source_type"],
            "c2pa": False, "training_mining": [], "c2pa_assertions": [], "claim_version": None,
            "form": sample["form"] if (sample["data_mining"] or sample["digital_source_type"]) else None,
            "extended_xmp": extended is not None, "layout": container_layout(data, fmt), "note": note}


def verify_c2pa_file(out, sample, tool):
    """Checks a c2pa-python-signed file: c2pa.Reader's active manifest, and the JUMBF store found by walking the
    container (labels, APP11 segments); returns the samples.json record."""
    file, fmt = sample["file"], sample["format"]
    data = (out / file).read_bytes()
    manifest = read_c2pa(out / file, fmt)
    check(manifest is not None, file, "c2pa.Reader finds no manifest")
    assertions = manifest.get("assertions", [])

    def base_label(label):
        return label.split("__")[0]

    actions = [a for a in assertions if base_label(a["label"]) in ("c2pa.actions", "c2pa.actions.v2")]
    check(len(actions) == 1, file, f"{len(actions)} actions assertions")
    first = actions[0]["data"]["actions"][0]
    check(first["action"] == "c2pa.created" and first.get("digitalSourceType") == sample["dst"], file,
          f"first action {first}")
    mining = [a for a in assertions if base_label(a["label"]) in ("c2pa.training-mining", "cawg.training-mining")]
    training = []
    if sample["tm_label"]:
        check(len(mining) == 1 and base_label(mining[0]["label"]) == sample["tm_label"], file,
              f"training-mining assertions {[a['label'] for a in mining]}")
        check(mining[0]["data"]["entries"] == sample["entries"], file, f"entries {mining[0]['data']['entries']}")
        for entry, value in sorted(sample["entries"].items()):
            item = {"label": mining[0]["label"], "entry": entry, "use": value["use"]}
            if "constraint_info" in value:
                item["constraint_info"] = value["constraint_info"]
            training.append(item)
    else:
        check(not mining, file, "unexpected training-mining assertion")
    if sample["claim_version"]:
        check(manifest.get("claim_version") == sample["claim_version"], file, "claim version")

    if fmt == "jpeg":
        layout = jpeg_c2pa_layout(data)
    else:
        store = c2pa_store_bytes(data, fmt)
        check(store is not None, file, "no C2PA store found by walking the container")
        layout = c2pa_store_layout(store)
    check(layout is not None, file, "no APP11 JUMBF segments")
    for assertion in assertions:
        check(assertion["label"] in layout["labels"], file, f"{assertion['label']} not in the JUMBF assertion store")
    note = sample["note"]
    where = {"jpeg": "JPEG APP11 JUMBF", "png": "PNG caBX chunk", "webp": "WebP C2PA chunk",
             "gif": "GIF application extension C2PA_GIF (auth code 01 00 00), ordinary sub-blocks"}[fmt]
    note = f"{note}; store in {where}"
    if fmt == "jpeg":
        note += f" ({layout['segments']} segment{'s' if layout['segments'] > 1 else ''})"
        if sample["multi"]:
            check(layout["segments"] > 1, file, "store in one APP11 segment")
            box = layout["boxes"][mining[0]["label"]]
            note += f"; store {len(layout['store'])} bytes; the {mining[0]['label']} CBOR box content spans store " \
                    f"offsets {box['content_start']}-{box['content_end']}, across the segment boundary at " \
                    f"{layout['boundaries'][-1]}"
    dm = sample["xmp"]["dm"] if sample["xmp"] else None
    check(tool.get("DataMining") == dm, file, f"exiftool reads DataMining {tool.get('DataMining')}")
    check(tool.get("DigitalSourceType") is None, file, "exiftool reads an XMP DigitalSourceType")
    return {"file": file, "format": fmt, "writer": "exiftool+c2pa" if sample["xmp"] else "c2pa", "base": BASE[fmt],
            "width": tool.get("ImageWidth"), "height": tool.get("ImageHeight"),
            "data_mining": dm, "digital_source_type": sample["dst"], "c2pa": True, "training_mining": training,
            "c2pa_assertions": layout["labels"], "claim_version": manifest.get("claim_version"),
            "form": "element" if dm else None, "extended_xmp": False, "layout": container_layout(data, fmt),
            "note": note}


def verify_plain_file(out, file, fmt, tool):
    """Checks a plain copy: no XMP property, no manifest."""
    check(tool.get("DataMining") is None and tool.get("DigitalSourceType") is None, file, "has XMP properties")
    check(xmp_packets((out / file).read_bytes(), fmt)[0] is None, file, "has XMP")
    check(read_c2pa(out / file, fmt) is None, file, "has a C2PA manifest")
    return {"file": file, "format": fmt, "writer": "copy", "base": BASE[fmt],
            "width": tool.get("ImageWidth"), "height": tool.get("ImageHeight"), "data_mining": None,
            "digital_source_type": None, "c2pa": False, "training_mining": [], "c2pa_assertions": [],
            "claim_version": None, "form": None, "extended_xmp": False,
            "layout": container_layout((out / file).read_bytes(), fmt),
            "note": f"control: a byte copy of Samples/{BASE[fmt]}, no XMP, no manifest"}


def main():
    """Writes every sample into OUTDIR, reads each back, writes OUTDIR/samples.json; exit 1 on any mismatch."""
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUTDIR")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    xmp, signed = xmp_samples(), c2pa_samples()
    plain = [("plain.jpg", "jpeg"), ("plain.png", "png")]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        configs = {"plain": tmp / "plain.config", "resource": tmp / "resource.config"}
        configs["plain"].write_text(CONFIG_PLAIN)
        configs["resource"].write_text(CONFIG_RESOURCE)
        signer = make_signer()
        for sample in xmp + signed:
            try:
                if sample in xmp:
                    write_xmp_sample(sample, out, configs)
                else:
                    write_c2pa_sample(sample, out, signer, tmp)
            except (RuntimeError, Mismatch, c2pa.C2paError) as error:
                sys.exit(f"consent_samples: could not write {sample['file']}: {error}")
        for file, fmt in plain:
            shutil.copyfile(BASES / BASE[fmt], out / file)

    files = [s["file"] for s in xmp] + [s["file"] for s in signed] + [f for f, _ in plain]
    tool = read_exiftool(out, files)
    records = []
    try:
        for sample in xmp:
            records.append(verify_xmp_file(out, sample, tool[sample["file"]]))
        for sample in signed:
            records.append(verify_c2pa_file(out, sample, tool[sample["file"]]))
        for file, fmt in plain:
            records.append(verify_plain_file(out, file, fmt, tool[file]))
    except Mismatch as error:
        sys.exit(f"consent_samples: read-back mismatch: {error}")
    (out / "samples.json").write_text(json.dumps(records, indent=1) + "\n")
    for record in records:
        print(f"{record['file']:<72} {(out / record['file']).stat().st_size:>7} bytes")
    print(f"{len(records)} files and samples.json in {out} (exiftool {exiftool('-ver').decode().strip()}, "
          f"c2pa-python {c2pa.__version__}, c2pa-rs {c2pa.sdk_version()})")


if __name__ == "__main__":
    main()
