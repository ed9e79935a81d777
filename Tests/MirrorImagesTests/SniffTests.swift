import Foundation
import MirrorImages
import Testing

@Suite("Sniffing the first bytes")
struct SniffTests {
    @Test("the first 32 bytes of each sample give its format", arguments: Sample.all)
    func firstBytes(_ sample: Sample) throws {
        let prefix = try sample.data().prefix(32)
        #expect(ImageValidator.sniff(prefix) == sample.format)
    }

    @Test("twelve bytes are enough for every format outside ISO-BMFF", arguments: Sample.all.filter {
        $0.format != .avif && $0.format != .heif
    })
    func twelveBytes(_ sample: Sample) throws {
        #expect(ImageValidator.sniff(try sample.data().prefix(12)) == sample.format)
    }

    @Test("bodies that merely look similar are not images")
    func nearMisses() {
        #expect(ImageValidator.sniff(Data()) == nil)
        #expect(ImageValidator.sniff(Data([0xFF, 0xD8])) == nil)  // SOI without a following marker
        #expect(ImageValidator.sniff(Data("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt ".utf8)) == nil)
        #expect(ImageValidator.sniff(Data("GIF90a".utf8)) == nil)
        #expect(ImageValidator.sniff(Data("BMW is a car maker, not a bitmap".utf8)) == nil)
        #expect(ImageValidator.sniff(Data("<html>".utf8)) == nil)
    }

    @Test("AVIF wins over the generic HEIF brand, and mif1 alone means HEIF")
    func isoBrands() {
        func ftyp(_ major: String, _ compatible: [String]) -> Data {
            let brands = compatible.joined()
            return Data([0, 0, 0, UInt8(16 + brands.utf8.count)]) + Data(("ftyp" + major).utf8)
                + Data([0, 0, 0, 0]) + Data(brands.utf8)
        }
        #expect(ImageValidator.sniff(ftyp("mif1", ["mif1", "miaf", "avif"])) == .avif)
        #expect(ImageValidator.sniff(ftyp("avis", ["msf1"])) == .avif)
        #expect(ImageValidator.sniff(ftyp("mif1", ["mif1", "heix"])) == .heif)
        #expect(ImageValidator.sniff(ftyp("msf1", [])) == .heif)
        #expect(ImageValidator.sniff(ftyp("isom", ["iso2", "mp41"])) == nil)
    }
}

@Suite("Formats and messages")
struct ImageFormatTests {
    @Test("extensions, MIME types and names for every format")
    func properties() {
        let table = ImageFormat.allCases.map { "\($0.rawValue) \($0.fileExtension) \($0.mimeType) \($0.displayName)" }
        #expect(table == [
            "jpeg jpg image/jpeg JPEG",
            "png png image/png PNG",
            "gif gif image/gif GIF",
            "webp webp image/webp WebP",
            "bmp bmp image/bmp BMP",
            "tiff tiff image/tiff TIFF",
            "avif avif image/avif AVIF",
            "heif heic image/heic HEIF",
        ])
    }

    @Test("rejection descriptions are short sentences")
    func descriptions() {
        #expect(ImageRejection.truncated(.webp, "RIFF size says 128 bytes, have 118").description
            == "truncated WebP: RIFF size says 128 bytes, have 118")
        #expect(ImageRejection.malformed(.heif, "no ispe property").description == "malformed HEIF: no ispe property")
        #expect(ImageRejection.unknownFormat(prefix: "").description == "unknown format")
        #expect(ImageRejection.text(.xml).description == "XML text, not an image")
    }

    @Test("pixelCount saturates instead of trapping")
    func pixelCountSaturates() {
        #expect(ImageInfo(format: .png, width: 37, height: 23).pixelCount == 851)
        #expect(ImageInfo(format: .png, width: .max, height: 2).pixelCount == .max)
    }
}

@Suite("Files on disk")
struct FileValidationTests {
    @Test("an empty file is .empty and a missing file throws the file system's error")
    func emptyAndMissingFiles() throws {
        // Given a fresh temporary directory with an empty file in it
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let empty = directory.appendingPathComponent("empty.jpg")
        try Data().write(to: empty)

        // When each is validated
        // Then the empty file is an empty body, and the missing one is not an ImageRejection
        #expect(throws: ImageRejection.empty) { try ImageValidator().validate(fileAt: empty) }
        #expect {
            try ImageValidator().validate(fileAt: directory.appendingPathComponent("missing.jpg"))
        } throws: { error in
            !(error is ImageRejection)
        }
    }
}
