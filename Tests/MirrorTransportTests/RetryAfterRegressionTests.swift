import Foundation
import MirrorTransport
import Testing

/// `Retry-After` values that crashed `scripts/fuzz/fuzz text`, kept so the fix stays fixed.
@Suite("Fuzz regressions: Retry-After", .timeLimit(.minutes(5)))
struct RetryAfterRegressionTests {
    @Test("a non-ASCII HTTP-date is not a date, and does not reach DateFormatter (text crash-a8d4a885)")
    func nonASCIIHTTPDate() throws {
        // Given the saved input, selector 0x04 (Retry-After) then "We" + U+0301 + "h,stps"
        let input = try #require(Data(base64Encoded: "BFdlzIFoLHN0cHM="))
        let text = String(decoding: input.dropFirst(), as: UTF8.self)

        // When it is parsed (Foundation's DateFormatter trapped: "Incorrect range CFRange(location: 0, length: 2)")
        // Then it is neither a delay nor a date
        #expect(RetryAfter.parse(text) == nil)
        #expect(RetryAfter.httpDate(text) == nil)
        #expect(RetryAfter.httpDate("Wed, 21 Oct 2015 07:28:00 GMT") != nil)
    }

    @Test("a date thousands of years ahead is a long wait, not an Int64 overflow")
    func farFutureDate() {
        // Given a valid HTTP-date in the year 9999
        let now = Date(timeIntervalSince1970: 0)

        // When it is parsed
        let wait = RetryAfter.parse("Fri, 31 Dec 9999 23:59:59 GMT", now: now)

        // Then the wait is positive and bounded
        #expect(wait != nil && wait! > .seconds(0) && wait! <= .seconds(1_000_000_000_000))
    }
}
