// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "mirror",
    products: [
        .executable(name: "mirror", targets: ["mirror"]),
        .library(name: "MirrorKit", targets: ["MirrorKit"]),
        .library(name: "MirrorParquet", targets: ["MirrorParquet"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-http-structured-headers", from: "1.2.0"),
    ],
    targets: [
        // libcurl, found through pkg-config; typed shims for its variadic calls live in shim.h.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // libarchive, for WebDataset's tar shards.
        .systemLibrary(
            name: "CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]
        ),
        // The resize path (ARCHITECTURE.md): decoding with the memory it takes checked from the headers first, fitting and
        // encoding, on TurboJPEG, libpng, libwebp and giflib, with the resampler of libstb-dev's stb_image_resize.h compiled
        // in (its assertions made errors) and libvips loaded with dlopen for the other formats. C files and one public header,
        // built with every warning an error (safe settings, SE-0480: SwiftPM drops them where another package depends on
        // this one) and, when this package is the one being built, optimised even in debug builds (see `codecsSettings`).
        .target(
            name: "CCodecs",
            cSettings: codecsSettings,
            linkerSettings: [
                .linkedLibrary("turbojpeg"), .linkedLibrary("png16"), .linkedLibrary("webp"), .linkedLibrary("gif"),
                .linkedLibrary("dl"), .linkedLibrary("m"),
            ]
        ),
        // The codecs' test-only entry points (the geometry sweeps, the EXIF reader alone), declared apart from the resize
        // path's header; defined in CCodecs, whose internals they run.
        .target(name: "CCodecsTesting", dependencies: ["CCodecs"]),
        // The codecs' headers and libraries for tests and test servers that make images (crafted ones among them).
        .systemLibrary(
            name: "CImageLibraries",
            providers: [.apt(["libturbojpeg0-dev", "libpng-dev", "libwebp-dev", "libgif-dev"])]
        ),
        // zlib, for gzip tables (already linked by libcurl and libpng; it checks a member's CRC-32, libarchive does not).
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // The decompressors of Parquet pages besides gzip (CZlib): SNAPPY, ZSTD, LZ4_RAW (and the old LZ4), BROTLI.
        .systemLibrary(name: "CSnappy", providers: [.apt(["libsnappy-dev"])]),
        .systemLibrary(name: "CZstd", providers: [.apt(["libzstd-dev"])]),
        .systemLibrary(name: "CLZ4", providers: [.apt(["liblz4-dev"])]),
        .systemLibrary(name: "CBrotli", providers: [.apt(["libbrotli-dev"])]),
        // glibc calls the Glibc module does not import: malloc_trim (the CLI's MemoryPolicy), renameat2 and syncfs
        // (AtomicFile), prctl (the transport's thread names).
        .systemLibrary(name: "CSyscalls"),
        // The package's one lock, `Locked`: a target with no dependency at all, so that every layer can use it, the
        // transport included (which everything else is built on).
        .target(name: "MirrorSync"),
        // HTTP over libcurl: driver threads, transfers, responses, typed errors, the one Retry-After parser.
        .target(name: "MirrorTransport", dependencies: ["MirrorSync", "CCurl", "CSyscalls"]),
        // Parquet tables, read from the specification: the footer, pages, encodings, codecs and lists; streaming one row
        // group's chosen column chunks at a time, every size read from the file bounded before it is used. Foundation and
        // the decompressors only, so it can be fuzzed alone.
        .target(name: "MirrorParquet", dependencies: ["CZlib", "CSnappy", "CZstd", "CLZ4", "CBrotli"]),
        // Image bytes: format sniffing, header dimensions, completeness. No dependencies, so it can be fuzzed alone.
        .target(name: "MirrorImages"),
        // MirrorKit's layers, bottom to top, as targets the compiler keeps honest (ARCHITECTURE.md): what crosses them is
        // `package`, what users of the library call is `public`.
        // Support: locks' users, atomic files and their one error type, the clock, retries, on-disk key sets, hashing.
        .target(
            name: "MirrorCore",
            dependencies: [
                "MirrorSync",
                "CSyscalls",  // AtomicFile's rename without replace
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The vocabulary every layer above speaks, with no storage in it: how a row ended (`RowOutcome`) and what was
        // counted (`Tally`), a verified image and its saved record (`VerifiedImage`, `ManifestRecord`), where an image came
        // from (`CacheType`), consent's words (signals, purposes, reservations, evidence) and what a duplicate is
        // (`Deduplication`, `NearDuplicatePolicy`).
        .target(name: "MirrorModel", dependencies: ["MirrorImages"]),
        // URL tables: text, CSV, TSV, JSONL (gzip or not) scanned as bytes, Parquet over MirrorParquet, folders of them;
        // every row's fields decoded without a byte replaced. No network and no storage, so it is fuzzed alone.
        .target(name: "MirrorTables", dependencies: ["MirrorCore", "MirrorModel", "MirrorParquet", "CZlib"]),
        // Caching (memory, disk, the façade) and output (the folder, its state, WebDataset shards). No transport: object
        // storage is the layer above, behind the shards' `ShardStore`.
        .target(
            name: "MirrorStorage",
            dependencies: [
                "MirrorSync",
                "MirrorCore",
                "MirrorModel",
                "MirrorImages",
                "CArchive",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // Object storage: S3 over the transport (SigV4 by libcurl, multipart, retries), and the shard store a `ShardSink`
        // delivers its shards to.
        .target(
            name: "MirrorObjectStore",
            dependencies: [
                "MirrorSync",
                "MirrorCore",
                "MirrorStorage",
                "MirrorTransport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Consent: the owners' wishes read (robots.txt, the TDMRep file, the response's headers), matched (RFC 9309's
        // path patterns) and decided on with the image's own marks (MirrorImages reads those) by one policy; the site
        // files fetched once per origin and remembered.
        .target(
            name: "MirrorConsent",
            dependencies: [
                "MirrorSync",
                "MirrorCore",  // ASCII case-insensitive comparisons
                "MirrorModel",
                "MirrorImages",
                "MirrorTransport",
                .product(name: "GRDB", package: "GRDB.swift"),  // the site memory
                // RFC 9651 structured fields: the AI-preferences `Content-Usage` header and robots.txt lines
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ]
        ),
        // Fetching one image: the download manager, its operations (consent asked on the way), transforms; `mirror why`.
        .target(
            name: "MirrorFetch",
            dependencies: [
                "MirrorSync",
                "MirrorCore",
                "MirrorModel",
                "MirrorConsent",
                "MirrorStorage",
                "MirrorTransport",
                "MirrorImages",
                "CCodecs",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),  // the slot machine's queues
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        // Searching: one file per API's provider, the API client, the paginator and the feed. No CSV, no gzip.
        .target(name: "MirrorSearch", dependencies: ["MirrorSync", "MirrorCore", "MirrorModel", "MirrorStorage", "MirrorTransport"]),
        // The jobs: sources (the search feed, URL tables), the one pipeline, the jobs, the gallery; re-exports the layers
        // below, so that `import MirrorKit` is the library's whole API.
        .target(
            name: "MirrorKit",
            dependencies: [
                "MirrorSync",
                "MirrorCore",
                "MirrorModel",
                "MirrorConsent",
                "MirrorStorage",
                "MirrorObjectStore",
                "MirrorFetch",
                "MirrorSearch",
                "MirrorTransport",
                "MirrorImages",
                "MirrorTables",
            ]
        ),
        .executableTarget(
            name: "mirror",
            dependencies: [
                "MirrorKit",
                "MirrorSync",  // Locked
                "MirrorTransport",  // status's own driver
                "CSyscalls",  // MemoryPolicy
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "TOMLKit", package: "TOMLKit"),  // the configuration file
            ]
        ),
        // An in-process HTTP/1.1 server on loopback for every test that needs HTTP.
        .target(
            name: "MirrorTestSupport",
            dependencies: [
                "MirrorSync",  // Locked
                "CImageLibraries",  // crafted and ordinary images to serve
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(name: "mirror-bench-server", dependencies: ["MirrorTestSupport"]),  // serves a folder with latency for scripts/bench/bench
        .executableTarget(name: "mirror-bench-index", dependencies: ["MirrorCore", "MirrorImages", "MirrorModel", "MirrorStorage"]),  // times --dedup near's lookup at scale
        // Serves the APIEmulator on loopback for hand runs and scripts/demo; prints MIRROR_*_ENDPOINT and key variables.
        .executableTarget(name: "mirror-emulator", dependencies: ["MirrorTestSupport"]),
        .testTarget(name: "MirrorTransportTests", dependencies: ["MirrorSync", "MirrorTransport", "MirrorTestSupport"]),
        .testTarget(name: "MirrorImagesTests", dependencies: ["MirrorImages"], resources: [.copy("Samples")]),
        .testTarget(
            name: "MirrorKitTests",
            dependencies: [
                "MirrorSync", "MirrorKit", "MirrorCore", "MirrorModel", "MirrorTables", "MirrorConsent", "MirrorStorage", "MirrorObjectStore", "MirrorFetch", "MirrorSearch", "MirrorTestSupport", "CCodecs",
                "CCodecsTesting", "CImageLibraries",
            ],
            resources: [.copy("Fixtures")]
        ),
        // Reads the real writers' files in Tests/MirrorKitTests/Fixtures/parquet (found from the source tree, not copied).
        .testTarget(name: "MirrorParquetTests", dependencies: ["MirrorParquet"]),
        .testTarget(name: "MirrorTestSupportTests", dependencies: ["MirrorTestSupport"]),
        // Tables/: Parquet files pyarrow wrote (scripts/fixtures/make_table_fixtures.py), read from the source tree by the binary.
        .testTarget(name: "mirrorTests", dependencies: ["MirrorSync", "MirrorTransport", "MirrorTestSupport"], exclude: ["Tables"]),
    ],
    swiftLanguageModes: [.v6]
)

/// The codecs' C settings: `-Wall -Wextra`, every warning an error; and `-O2` in every configuration when this package is
/// the root of the build, not when another package depends on it. The resample sweep test runs stb's resampler ~650,000
/// times: 113 s at `-O2`, 494 s at `-O0` (measured, debug build). `-O2` has no safe setting, and SwiftPM refuses an
/// unsafe flag in a package used as a versioned dependency; a dependency's checkout lives under its user's
/// `.build/checkouts/` (or Xcode's `SourcePackages/checkouts/`), and there the flag is left out: the user's own
/// configuration decides how the codecs are optimised. `scripts/check/check-consumer` builds such a user.
var codecsSettings: [CSetting] {
    let safe: [CSetting] = [.enableWarning("all"), .enableWarning("extra"), .treatAllWarnings(as: .error)]
    let directory = Context.packageDirectory
    let isDependency = directory.contains("/.build/checkouts/") || directory.contains("/SourcePackages/checkouts/")
    return isDependency ? safe : safe + [.unsafeFlags(["-O2"])]
}
