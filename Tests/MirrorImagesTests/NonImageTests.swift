import Foundation
import MirrorImages
import Testing

@Suite("Bodies that are not images")
struct NonImageTests {
    @Test("an empty body")
    func empty() {
        #expect(rejection(of: Data()) == .empty)
        #expect(ImageRejection.empty.description == "empty body")
    }

    @Test("HTML error pages, with or without BOM and leading whitespace, in any case", arguments: [
        "<!DOCTYPE html><html><head><title>404 Not Found</title></head><body>Not Found</body></html>",
        "<!doctype html>\n<html lang=\"en\">",
        "\u{FEFF}<html><body>Forbidden</body></html>",
        "\u{FEFF} \r\n\t <HTML>\n<HEAD><TITLE>403</TITLE></HEAD>",
        "\n\n<head><meta charset=utf-8></head>",
        "<body onload=\"challenge()\">",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Strict//EN\">\n<html xmlns=\"http://www.w3.org/1999/xhtml\">",
        "<!-- served by nginx -->\n<html>",
    ])
    func html(_ page: String) {
        // Given a body that is an HTML page, as a CDN or server error returns with status 200
        let body = Data(page.utf8)

        // When it is validated
        let result = rejection(of: body)

        // Then it is identified as HTML
        #expect(result == .html)
        #expect(result?.description == "HTML page, not an image")
    }

    @Test("JSON error bodies")
    func json() {
        #expect(rejection(of: Data(#"{"error":{"code":429,"message":"Rate limit exceeded"}}"#.utf8)) == .text(.json))
        #expect(rejection(of: Data("\n  [\"not\", \"an\", \"image\"]".utf8)) == .text(.json))
        #expect(ImageRejection.text(.json).description == "JSON text, not an image")
    }

    @Test("XML error documents that are not HTML")
    func xml() {
        let s3 = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
        #expect(rejection(of: Data(s3.utf8)) == .text(.xml))
        // <header> is not <head>
        #expect(rejection(of: Data("<header>hi</header>".utf8)) == .text(.xml))
    }

    @Test("plain text, ASCII or UTF-8")
    func plainText() {
        #expect(rejection(of: Data("Forbidden\n".utf8)) == .text(.plain))
        #expect(rejection(of: Data("Zugriff verweigert – bitte später erneut versuchen. 拒绝访问".utf8)) == .text(.plain))
        #expect(ImageRejection.text(.plain).description == "plain text, not an image")
    }

    @Test("random bytes are an unknown format, reported with their first 16 bytes in hex")
    func randomBytes() {
        // Given 4 KB from a seeded generator, whose first bytes are no image signature
        var generator = SplitMix64(seed: 42)
        let bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let expectedPrefix = bytes.prefix(16).map { String(format: "%02x", $0) }.joined(separator: " ")

        // When they are validated
        let result = rejection(of: Data(bytes))

        // Then the rejection carries the hex prefix
        #expect(result == .unknownFormat(prefix: expectedPrefix))
        #expect(result?.description == "unknown format (starts with \(expectedPrefix))")
    }

    @Test("short binary bodies give a short hex prefix")
    func shortBinary() {
        #expect(rejection(of: Data([0x00, 0x01, 0xFE])) == .unknownFormat(prefix: "00 01 fe"))
    }

    @Test("other ISO-BMFF files (an MP4 video) are not images")
    func mp4() {
        // ftyp isom with mp41 and avc1 compatible brands
        let body = Data([0, 0, 0, 0x18]) + Data("ftypisom".utf8) + Data([0, 0, 2, 0]) + Data("mp41avc1".utf8)
        #expect(rejection(of: body) == .unknownFormat(prefix: "00 00 00 18 66 74 79 70 69 73 6f 6d 00 00 02 00"))
    }
}
