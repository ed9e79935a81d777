#!/usr/bin/env python3
"""Ground truth for near-duplicate detection: real photographs, the variants of each that a detector must merge with
it, and the hard cases it must keep apart; with Meta's reference PDQ hash as the yardstick of what is near.

    python3 scripts/check/near_truth.py OUT [--report FILE]   # writes OUT/ and OUT/truth.json; with pdqhash importable,
                                                         # prints the PDQ distances and writes OUT/pdq_report.json
    from near_truth import make_truth                    # a check script: manifest = make_truth(folder)

The photographs come from PyPI wheels and nothing else: no image is downloaded, no package is imported (the files are
found beside the package with importlib's find_spec, so scikit-image's pooch fetcher never runs). Only Pillow is
needed to make the files, so the data packages can be installed bare:

    python3 -m venv /tmp/near-venv && /tmp/near-venv/bin/pip install pillow
    /tmp/near-venv/bin/pip install --no-deps scikit-image scikit-learn   # their image files only
    /tmp/near-venv/bin/pip install numpy pdqhash                          # the report only (builds Meta's C++)

The pictures (PHOTOS): every real photograph in scikit-image's wheel (skimage/data) and scikit-learn's
(sklearn/datasets/images): astronaut, camera, chelsea (the cat; skimage's `cat()` is the same file), coffee, coins,
rocket, ihc (immunohistochemistry: a microscope photograph), moon (lunar surface), cell (phase contrast), clock
(a wall clock photographed while the camera moved: mostly flat grey, PDQ quality well below 50), brick, grass and gravel
(photographs of textures), hubble (the Hubble Deep Field: a real photograph, kept whole), motorcycle-left and
motorcycle-right (a stereo pair), retina (a fundus photograph, 1411×1411), china and flower (scikit-learn); and the two
text pages (flagged "text"): page (a scanned book page, printed) and text (handwritten formulas photographed at a slant).
Some photographs' four non-overlapping quarters are pictures of their own (QUARTER_PICTURES): the retina's (705×705,
each a different stretch of vessels and arc of the black border); the rocket's (its upper two mostly dusk sky), the
clock's (grey with an arc of the blurred clock), the moon's (nearly flat), the camera's, the coffee's, the cat's and
the handwriting's, each with QUARTER_VARIANTS — the copies issue 45 tried as a new user would. Low-contrast pictures
(PDQ quality under 50 in Meta's reference: the clock and its quarters, the rocket's sky, the cell) are flagged
"low_contrast". The Hubble field's quarters, and the brick wall's, the gravel's and the grass's, are not pictures: the
same look with no pixel in common, so they are hard cases.

Left out, and why: checkerboard and chessboard, colorwheel (`color.png`), logo, horse (a binary silhouette) and
shepp_logan_phantom are drawn, not photographed; microaneurysms (102×102) and lfw_subset (25×25 faces) are too small to
resize to a quarter; no_time_for_that_tiny.gif is a 14×25 animation; the cell's quarters are grain alike to the eye;
brain, cells3d, eagle, kidney, lily, skin and the rest are not in the wheel (pooch downloads them), so they are never
used.

Each picture P is written as `P__original.jpg` (JPEG quality 95) and its variants `P__VARIANT.EXT` (VARIANTS): half,
60 % and quarter size, JPEG quality 15 and 40, lossy WebP, PNG, 3 % trimmed off each border, 4 % trimmed off each
border and enlarged back to the picture's size, 8 % and 15 % brighter, slightly blurred, and for a colour photograph a
grey version; a variant under 64 pixels on its shorter side (what mirror never compares) is not made. All are the same
picture (kind "same"); grey is listed in `report_separately`: the same picture to the eye, but a detector may
reasonably keep it apart. A mirrored copy is not a variant: a flip is a different picture here, so none is made.

Hard cases, which must not be merged (`hard_distinct` in the manifest: [file A, file B, reason]), are pictures of
their own, each a single file `P-CROP__original.jpg`: the left 60 % and the right 60 % of each photograph (a fifth in
common) against each other and against the whole; the top-left quarter against the whole (the quarters that are
pictures already: against the whole and against each other); the Hubble field's and the textures' quarters against
each other and the whole; and the stereo pair, variant against the same variant. Pictures cut from one photograph
share a `family`: pairs from different families are the plain "different" pairs of the report.

The report (only with numpy and pdqhash importable) hashes every file with Meta's PDQ (`pdqhash.compute`, the C++
reference) and gives, for same-picture pairs (each file against every other of its picture), grey pairs, different
pairs (every pair across families), hard pairs and the other pairs within a family (related), the Hamming distances
(histogram in bins of 4 bits, min, max, the extreme pairs), each file's PDQ quality, and the thresholds that separate
same from different.
"""
import argparse
import importlib.util
import itertools
import json
import os
import sys
import time

from PIL import Image, ImageEnhance, ImageFilter

# The pictures ---------------------------------------------------------------------------------------------------------

# (picture id, package, file inside the package, what it is)
PHOTOS = [
    ("astronaut", "skimage", "data/astronaut.png", "colour portrait (NASA)"),
    ("camera", "skimage", "data/camera.png", "grey: a man with a camera on a tripod"),
    ("chelsea", "skimage", "data/chelsea.png", "colour: a cat's face"),
    ("coffee", "skimage", "data/coffee.png", "colour: a cup of coffee on a table"),
    ("coins", "skimage", "data/coins.png", "grey: Greek coins on a dark ground"),
    ("rocket", "skimage", "data/rocket.jpg", "colour: a rocket on its launch pad at dusk"),
    ("ihc", "skimage", "data/ihc.png", "colour microscope photograph (immunohistochemistry)"),
    ("moon", "skimage", "data/moon.png", "grey: the lunar surface"),
    ("cell", "skimage", "data/cell.png", "grey microscope photograph (phase contrast): one cell, mostly flat"),
    ("clock", "skimage", "data/clock_motion.png", "grey: a wall clock, motion-blurred; mostly flat (low PDQ quality)"),
    ("brick", "skimage", "data/brick.png", "grey texture: a brick wall"),
    ("grass", "skimage", "data/grass.png", "grey texture: grass"),
    ("gravel", "skimage", "data/gravel.png", "grey texture: gravel"),
    ("hubble", "skimage", "data/hubble_deep_field.jpg", "colour: the Hubble Deep Field"),
    ("motorcycle-left", "skimage", "data/motorcycle_left.png", "colour: stereo pair, left view"),
    ("motorcycle-right", "skimage", "data/motorcycle_right.png", "colour: stereo pair, right view"),
    ("retina", "skimage", "data/retina.jpg", "colour fundus photograph of a retina"),
    ("china", "sklearn", "datasets/images/china.jpg", "colour: a pagoda above a lake"),
    ("flower", "sklearn", "datasets/images/flower.jpg", "colour: a dahlia"),
    ("page", "skimage", "data/page.png", "grey text: a scanned book page, printed"),
    ("text", "skimage", "data/text.png", "grey text: handwritten formulas on paper, photographed at a slant"),
]
FAMILY = {"motorcycle-left": "motorcycle", "motorcycle-right": "motorcycle"}  # else a photo is its own family
TEXTURES = {"brick", "grass", "gravel"}  # flagged "texture" (and their crops): the report also leaves them out
TEXTS = {"page", "text"}  # flagged "text" (and their crops)
# Pictures whose PDQ quality is under 50 in Meta's reference (flagged "low_contrast"): mostly flat, a few edges.
LOW_CONTRAST = {"clock", "clock-tl", "clock-tr", "clock-bl", "clock-br", "rocket-tl", "rocket-tr", "cell"}
QUARTERS = {"tl": (0, 0), "tr": (1, 0), "bl": (0, 1), "br": (1, 1)}
# Photos whose quarters are pictures of their own, each with variants: the retina's with every variant; the others' with
# QUARTER_VARIANTS, the copies a new user would try (issue 45): the rocket's sky and the motion-blurred clock are
# low-contrast, the slanted handwriting is text, the moon's surface nearly flat.
QUARTER_PICTURES = ["retina", "rocket", "clock", "camera", "coffee", "chelsea", "moon", "text"]
QUARTER_HARD = ["hubble", "brick", "gravel", "grass"]  # photos whose quarters look alike: single-file hard cases


def package_file(package, relative):
    """The path of a file shipped inside an installed package, without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the package {package} is not installed (pip install --no-deps "
                                f"{'scikit-image' if package == 'skimage' else 'scikit-learn'})")
    path = os.path.join(list(spec.submodule_search_locations)[0], relative)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{package} has no {relative} (its version is not one that ships it): {path}")
    return path


def load(package, relative):
    """The photograph as RGB or L pixels (L for a grey one, even if stored as RGB)."""
    with Image.open(package_file(package, relative)) as image:
        image.load()
        image = image.convert("RGB") if image.mode not in ("L", "RGB") else image
    if image.mode == "RGB" and image.convert("L").convert("RGB").tobytes() == image.tobytes():
        image = image.convert("L")
    return image


def crop(image, fraction):
    """`image` cropped to fractions of its width and height: (left, top, right, bottom), each 0–1."""
    left, top, right, bottom = fraction
    width, height = image.size
    box = (round(left * width), round(top * height), round(right * width), round(bottom * height))
    return image.crop(box), box


# The variants ---------------------------------------------------------------------------------------------------------

def resized(image, scale):
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, Image.Resampling.LANCZOS)


def trimmed(image, fraction=0.03):
    return crop(image, (fraction, fraction, 1 - fraction, 1 - fraction))[0]


def zoomed(image, fraction=0.04):
    """`fraction` trimmed off each border and the rest enlarged back to the picture's size."""
    return trimmed(image, fraction).resize(image.size, Image.Resampling.LANCZOS)


# variant name: (how it is made from the picture, format, extension, save options)
VARIANTS = {
    "original": (lambda image: image, "JPEG", "jpg", {"quality": 95}),
    "half": (lambda image: resized(image, 0.5), "JPEG", "jpg", {"quality": 90}),
    "size60": (lambda image: resized(image, 0.6), "JPEG", "jpg", {"quality": 90}),
    "quarter": (lambda image: resized(image, 0.25), "JPEG", "jpg", {"quality": 90}),
    "jpeg15": (lambda image: image, "JPEG", "jpg", {"quality": 15}),
    "jpeg40": (lambda image: image, "JPEG", "jpg", {"quality": 40}),
    "webp": (lambda image: image, "WEBP", "webp", {"quality": 75}),
    "png": (lambda image: image, "PNG", "png", {}),
    "trim3": (trimmed, "JPEG", "jpg", {"quality": 90}),
    "trim4zoom": (zoomed, "JPEG", "jpg", {"quality": 90}),
    "bright8": (lambda image: ImageEnhance.Brightness(image).enhance(1.08), "JPEG", "jpg", {"quality": 90}),
    "bright15": (lambda image: ImageEnhance.Brightness(image).enhance(1.15), "JPEG", "jpg", {"quality": 90}),
    "blur": (lambda image: image.filter(ImageFilter.GaussianBlur(1.5)), "JPEG", "jpg", {"quality": 90}),
    "grey": (lambda image: image.convert("L"), "JPEG", "jpg", {"quality": 90}),  # colour pictures only
}
# The copies of QUARTER_PICTURES' quarters (but the retina's): the six variants issue 45 tried, and half size.
QUARTER_VARIANTS = ["original", "half", "size60", "jpeg40", "webp", "png", "trim4zoom", "bright8"]
# A variant is not made when it would be under this many pixels on its shorter side (NearDuplicatePolicy.minimumSide:
# a smaller image is never compared, so a copy of it could never be recognised).
MINIMUM_SIDE = 64
REPORT_SEPARATELY = {"grey": "the grey version of a colour photograph: the same picture to the eye, but a detector "
                             "may reasonably keep it apart"}


# The manifest ---------------------------------------------------------------------------------------------------------

def make_truth(folder):
    """(Re)creates the ground truth in `folder` (made if missing; the files of an earlier run there are replaced) and
    returns the manifest, also written to `folder`/truth.json:

        {"pictures": {id: {"source", "family", "width", "height", "mode", "about", "texture", "text", "low_contrast",
                           ["crop": [l, t, r, b]]}},
         "files": {file name: {"picture", "variant", "kind": "same", "width", "height", "format"}},
         "report_separately": {variant: why},
         "hard_distinct": [[file A, file B, reason], ...]}

    Two files show the same picture exactly when their "picture" is the same. Needs Pillow only."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):  # only what an earlier run wrote
        if name == "truth.json" or ("__" in name and name.rsplit(".", 1)[-1] in ("jpg", "png", "webp")):
            os.remove(os.path.join(folder, name))
    pictures, files, hard = {}, {}, []

    def picture(identifier, image, source, family, about, box=None, variants=None):
        pictures[identifier] = {"source": source, "family": family, "width": image.width, "height": image.height,
                                "mode": image.mode, "about": about, "texture": family in TEXTURES,
                                "text": family in TEXTS, "low_contrast": identifier in LOW_CONTRAST,
                                **({"crop": list(box)} if box else {})}
        names = {}
        for variant in variants or VARIANTS:
            if variant == "grey" and image.mode == "L":
                continue
            make, fmt, extension, options = VARIANTS[variant]
            made = make(image)
            if min(made.size) < MINIMUM_SIDE:
                continue
            name = f"{identifier}__{variant}.{extension}"
            made.save(os.path.join(folder, name), fmt, **options)
            files[name] = {"picture": identifier, "variant": variant, "kind": "same", "width": made.width,
                           "height": made.height, "format": fmt.lower()}
            names[variant] = name
        return names

    def hard_crop(identifier, whole, fraction, source, family, about):
        image, box = crop(whole, fraction)
        return picture(identifier, image, source, family, about, box, ["original"])["original"]

    originals = {}
    for identifier, package, relative, about in PHOTOS:
        image, source, family = load(package, relative), f"{package}/{relative}", FAMILY.get(identifier, identifier)
        names = picture(identifier, image, source, family, about)
        originals[identifier] = names
        whole = names["original"]
        left = hard_crop(f"{identifier}-left60", image, (0, 0, 0.6, 1), source, family, f"left 60 % of {identifier}")
        right = hard_crop(f"{identifier}-right60", image, (0.4, 0, 1, 1), source, family, f"right 60 % of {identifier}")
        hard += [[left, right, "the left and the right 60 % of one photo (a fifth in common)"],
                 [left, whole, "the left 60 % of a photo and the whole photo"],
                 [right, whole, "the right 60 % of a photo and the whole photo"]]
        if identifier in QUARTER_PICTURES or identifier in QUARTER_HARD:
            quarters = []
            for quarter, (x, y) in QUARTERS.items():
                fraction = (x / 2, y / 2, (x + 1) / 2, (y + 1) / 2)
                name = f"{identifier}-{quarter}"
                if identifier in QUARTER_PICTURES:
                    part, box = crop(image, fraction)
                    quarters.append(picture(name, part, source, family, f"{quarter} quarter of {identifier}", box,
                                            None if identifier == "retina" else QUARTER_VARIANTS)["original"])
                else:
                    quarters.append(hard_crop(name, image, fraction, source, family,
                                              f"{quarter} quarter of {identifier}"))
                hard.append([quarters[-1], whole, "a quarter of a photo and the whole photo"])
            reason = ("non-overlapping quarters of one photo" if identifier in QUARTER_PICTURES else
                      "non-overlapping quarters of one star field or texture: alike to the eye, no pixel in common")
            hard += [[a, b, reason] for a, b in itertools.combinations(quarters, 2)]
        else:
            top_left = hard_crop(f"{identifier}-tl", image, (0, 0, 0.5, 0.5), source, family,
                                 f"top-left quarter of {identifier}")
            hard.append([top_left, whole, "the top-left quarter of a photo and the whole photo"])
    left, right = originals["motorcycle-left"], originals["motorcycle-right"]
    hard += [[left[variant], right[variant], f"a stereo pair (one scene from two viewpoints), both {variant}"]
             for variant in left]
    manifest = {"pictures": pictures, "files": files, "report_separately": REPORT_SEPARATELY, "hard_distinct": hard}
    with open(os.path.join(folder, "truth.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1)
    return manifest


# The reference report (PDQ) -------------------------------------------------------------------------------------------

BIN = 4  # histogram bins of 4 bits


def pdq(path):
    """Meta's reference PDQ of a file: (256-bit hash as an int, quality 0–100)."""
    import numpy
    import pdqhash
    with Image.open(path) as image:
        pixels = numpy.asarray(image.convert("RGB"))
    bits, quality = pdqhash.compute(pixels)
    return int("".join("1" if bit else "0" for bit in bits), 2), int(quality)


def pair_groups(manifest):
    """The file pairs by what they are: same (one picture, grey left out), grey (a grey file and another of its
    picture), different (across families), hard (hard_distinct), related (the rest within a family)."""
    files, pictures = manifest["files"], manifest["pictures"]
    separate = set(manifest["report_separately"])
    hard = {frozenset(pair[:2]) for pair in manifest["hard_distinct"]}
    groups = {"same": [], "grey": [], "different": [], "hard": [], "related": []}
    for a, b in itertools.combinations(sorted(files), 2):
        pa, pb = files[a]["picture"], files[b]["picture"]
        if pa == pb:
            grey = files[a]["variant"] in separate or files[b]["variant"] in separate
            groups["grey" if grey else "same"].append((a, b))
        elif frozenset((a, b)) in hard:
            groups["hard"].append((a, b))
        elif pictures[pa]["family"] != pictures[pb]["family"]:
            groups["different"].append((a, b))
        else:
            groups["related"].append((a, b))
    return groups


def summary(distances, largest):
    """Count, min, max, the histogram (bins of BIN bits, from the lowest bin used to the highest) and the five pairs
    at the end that matters (the largest distances for same pictures, the smallest for different ones)."""
    if not distances:
        return {"pairs": 0}
    values = [d for d, _, _ in distances]
    low, high = min(values) // BIN, max(values) // BIN
    histogram = {f"{n * BIN}-{n * BIN + BIN - 1}": 0 for n in range(low, high + 1)}
    for value in values:
        histogram[f"{value // BIN * BIN}-{value // BIN * BIN + BIN - 1}"] += 1
    extreme = sorted(distances, reverse=largest)[:5]
    return {"pairs": len(values), "min": min(values), "max": max(values), "histogram": histogram,
            "extremes": [[d, a, b] for d, a, b in extreme]}


def report(folder, manifest, path):
    """Hashes every file, prints the distances by group and writes them to `path` (JSON)."""
    started = time.monotonic()
    hashes = {name: pdq(os.path.join(folder, name)) for name in manifest["files"]}
    hashing = time.monotonic() - started
    groups = pair_groups(manifest)

    def distance(a, b):
        return (hashes[a][0] ^ hashes[b][0]).bit_count()

    measured = {group: [(distance(a, b), a, b) for a, b in pairs] for group, pairs in groups.items()}
    summaries = {group: summary(values, group in ("same", "grey")) for group, values in measured.items()}
    files = manifest["files"]
    by_variant, by_variant_photos = {}, {}  # each variant against its original: the largest distance (no textures)
    for d, a, b in measured["same"] + measured["grey"]:
        for one, other in ((a, b), (b, a)):
            if files[other]["variant"] == "original":
                variant = files[one]["variant"]
                by_variant[variant] = max(by_variant.get(variant, (0, "")), (d, one))
                if not manifest["pictures"][files[one]["picture"]]["texture"]:
                    by_variant_photos[variant] = max(by_variant_photos.get(variant, (0, "")), (d, one))
    low = sorted(name for name, (_, quality) in hashes.items() if quality < 50)

    def separation(same, other):
        if not same or not other:
            return None
        worst, best = max(same), min(other)
        return {"max_same": worst[0], "max_same_pair": worst[1:], "min_other": best[0], "min_other_pair": best[1:],
                "separates": worst[0] < best[0], "thresholds": [worst[0], best[0] - 1], "margin": best[0] - worst[0]}

    others = measured["different"] + measured["hard"]
    pictures = manifest["pictures"]

    def same_without(variants=(), textures=False, quality=0):
        return [entry for entry in measured["same"]
                if not any(files[f]["variant"] in variants or (textures and pictures[files[f]["picture"]]["texture"])
                           or hashes[f][1] < quality for f in entry[1:])]

    thresholds = {"same vs different+hard": separation(measured["same"], others),
                  "same+grey vs different+hard": separation(measured["same"] + measured["grey"], others),
                  "same (quality >= 50) vs different+hard": separation(same_without(quality=50), others),
                  "same, no textures vs different+hard": separation(same_without(textures=True), others),
                  "same, no trim3 vs different+hard": separation(same_without(["trim3"]), others),
                  "same, no trim3, no textures vs different+hard": separation(same_without(["trim3"], True), others),
                  "same, no trim3, no textures vs different": separation(same_without(["trim3"], True),
                                                                        measured["different"])}
    hard_by_reason = {}
    reasons = {frozenset(pair[:2]): pair[2].split(", both ")[0] for pair in manifest["hard_distinct"]}
    for d, a, b in measured["hard"]:
        reason = reasons[frozenset((a, b))]
        hard_by_reason[reason] = min(hard_by_reason.get(reason, (256, "", "")), (d, a, b))
    result = {"files": {name: {"pdq": f"{value:064x}", "quality": quality}
                        for name, (value, quality) in hashes.items()},
              "groups": summaries, "max_by_variant": {v: list(entry) for v, entry in sorted(by_variant.items())},
              "max_by_variant_no_textures": {v: list(entry) for v, entry in sorted(by_variant_photos.items())},
              "hard_min_by_reason": {r: list(entry) for r, entry in hard_by_reason.items()},
              "low_quality": low, "thresholds": thresholds, "hash_seconds": round(hashing, 2)}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)

    print(f"PDQ of {len(hashes)} files in {hashing:.1f} s; quality < 50: {', '.join(low) or 'none'}")
    qualities = {}
    for name, (_, quality) in hashes.items():
        qualities.setdefault(files[name]["picture"], []).append(quality)
    print("PDQ quality below 100 (the lowest of each picture's files): " + ", ".join(
        f"{picture} {min(values)}" for picture, values in qualities.items() if min(values) < 100) + ", the rest 100")
    for group, entry in summaries.items():
        if not entry["pairs"]:
            continue
        bins = " ".join(f"{key}:{count}" for key, count in entry["histogram"].items())
        print(f"{group}: {entry['pairs']} pairs, min {entry['min']}, max {entry['max']}; {bins}")
        print("   " + "; ".join(f"{d} {a} ~ {b}" for d, a, b in entry["extremes"][:3]))
    for title, table in (("", by_variant), (" (no textures)", by_variant_photos)):
        print(f"largest distance to the original by variant{title}: " + ", ".join(
            f"{variant} {d} ({name.split('__')[0]})" for variant, (d, name) in
            sorted(table.items(), key=lambda item: -item[1][0])))
    print("smallest distance of the hard pairs by reason: " + "; ".join(
        f"{reason} {d} ({a} ~ {b})" for reason, (d, a, b) in sorted(hard_by_reason.items(), key=lambda item: item[1])))
    for title, entry in thresholds.items():
        if entry:
            print(f"{title}: max same {entry['max_same']}, min other {entry['min_other']} "
                  f"({' ~ '.join(entry['min_other_pair'])}): "
                  + (f"any threshold {entry['thresholds'][0]}–{entry['thresholds'][1]} separates, margin "
                     f"{entry['margin']}" if entry["separates"] else "they overlap"))
    print(f"report: {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="where the files and truth.json are (re)made")
    parser.add_argument("--report", help="the PDQ report's path (default FOLDER/pdq_report.json)")
    options = parser.parse_args()
    started = time.monotonic()
    manifest = make_truth(options.folder)
    print(f"{len(manifest['files'])} files of {len(manifest['pictures'])} pictures, "
          f"{len(manifest['hard_distinct'])} hard pairs, in {options.folder} ({time.monotonic() - started:.1f} s)")
    try:
        import numpy  # noqa: F401
        import pdqhash  # noqa: F401
    except ImportError as error:
        print(f"no PDQ report: {error} (pip install numpy pdqhash)")
        return 0
    report(options.folder, manifest, options.report or os.path.join(options.folder, "pdq_report.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
