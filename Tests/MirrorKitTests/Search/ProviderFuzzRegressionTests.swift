import Foundation
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorKit
@testable import MirrorSearch
@testable import MirrorStorage
import MirrorTransport
import Testing

/// Inputs that crashed a fuzz harness (`scripts/fuzz/fuzz`), kept so the fix stays fixed.
///
/// Each raw input is embedded as base64, exactly as libFuzzer saved it, with the harness's reading of its
/// selector bytes spelled out; see `Fuzz/<Target>/main.swift` for the layouts.
@Suite("Fuzz regressions: providers", .timeLimit(.minutes(5)))
struct ProviderFuzzRegressionTests {
    /// The rows of the Providers harness, in its order.
    let pixabay = PixabayProvider(apiKey: "fuzz-pixabay-key-0123456789")

    @Test("Retry-After: 1e300 on a 429 is a long wait, not a trap (providers crash-a7e0f643)")
    func hugeFractionalRetryAfter() throws {
        // Given the saved input: provider 0x6f % 8 = 7 (Pixabay), status 0x75 % 21 = 12 (429),
        // flags 0xd9 (Retry-After: row 4, "1e300"), then a 7-byte body that is not JSON
        let input = try #require(Data(base64Encoded: "b3XZdIlvddBlfQ=="))
        #expect(Array(input.prefix(3)) == [0x6F, 0x75, 0xD9])
        let response = APIResponse(status: 429, headers: ["Retry-After": "1e300"], body: input.dropFirst(3))

        // When it is parsed (this converted 1e303 milliseconds to Int and trapped)
        let error = #expect(throws: ProviderError.self) { try pixabay.parse(response, cursor: .page(1)) }

        // Then it is rate limiting with the longest delay mirror represents, which the retry policy refuses to wait for
        guard case .rateLimited(let retryAfter, _) = error else {
            Issue.record("expected rateLimited, got \(String(describing: error))")
            return
        }
        #expect(retryAfter == .seconds(1_000_000_000_000))
        #expect(APIResponse(status: 429, headers: ["Retry-After": "1e300"], body: Data()).retryAfterHint == .seconds(1_000_000_000_000))
        #expect(APIResponse(status: 429, headers: ["Retry-After": "-1e300"], body: Data()).retryAfterHint == nil)
    }

    @Test("a non-ASCII Retry-After date is ignored, not passed to DateFormatter (text crash-a8d4a885)")
    func nonASCIIHTTPDate() throws {
        // Given the saved input: selector 0x04 (Retry-After), then "We" + U+0301 + "h,stps"
        let input = try #require(Data(base64Encoded: "BFdlzIFoLHN0cHM="))
        let text = String(decoding: input.dropFirst(), as: UTF8.self)
        #expect(text == "We\u{301}h,stps")

        // When it is read as a Retry-After value and as a Date header (Foundation's DateFormatter trapped with
        // "Incorrect range CFRange(location: 0, length: 2)")
        let delay = RetryAfter.parse(text, now: Date())
        let date = RetryAfter.httpDate(text)
        let viaResponse = APIResponse(status: 429, headers: ["Retry-After": text, "Date": text], body: Data()).retryAfterHint

        // Then it is simply not a date
        #expect(delay == nil && date == nil && viaResponse == nil)
        #expect(RetryAfter.httpDate("Wed, 21 Oct 2015 07:28:00 GMT") != nil)
    }

    // MARK: - Cursor arithmetic on numbers from the body (fixed with the crashes above)

    @Test("a page number of Int.max ends the walk instead of overflowing page + 1")
    func pageIntMax() throws {
        // Given bodies whose page field is Int.max
        let pexels = #"{"page":9223372036854775807,"photos":[{"id":1}],"next_page":"x"}"#
        let openverse = #"{"page":9223372036854775807,"page_count":9223372036854775807,"results":[{}]}"#
        let flickr = #"{"stat":"ok","photos":{"page":9223372036854775807,"pages":1,"perpage":100,"photo":[{}]}}"#

        // When they are parsed
        let pages = try [
            PexelsProvider(apiKey: "k").parse(response(200, pexels), cursor: .page(1)),
            OpenverseProvider().parse(response(200, openverse), cursor: .page(1)),
            FlickrProvider(apiKey: "k").parse(response(200, flickr), cursor: .page(1)),
        ]

        // Then there is no next page
        for page in pages { #expect(page.next == nil) }
    }

    @Test("page × per-page beyond Int.max counts as past the cap")
    func pageTimesPerPageOverflow() throws {
        // Given a Flickr page of 2^40 photos per page at page 2^40, with more pages to come
        let body = #"{"stat":"ok","photos":{"page":1099511627776,"pages":9223372036854775807,"perpage":1099511627776,"photo":[{}]}}"#

        // When it is parsed
        let page = try FlickrProvider(apiKey: "k").parse(response(200, body), cursor: .page(1))

        // Then the 4,000-result cap is reached
        #expect(page.continuation == .capped)
        #expect(Int.max.multipliedSaturating(by: 2) == .max && Int.max.multipliedSaturating(by: -2) == .min)
    }

    @Test("a Giphy offset near Int.max is capped instead of overflowing offset + count")
    func giphyOffsetOverflow() throws {
        // Given pagination at offset Int.max with 5 more items
        let body = #"{"data":[{}],"pagination":{"offset":9223372036854775807,"count":5}}"#

        // When it is parsed
        let page = try GiphyProvider(apiKey: "k").parse(response(200, body), cursor: .offset(0))

        // Then it is past the API's maximum offset
        #expect(page.continuation == .capped)
    }

    @Test("a Google nextPage startIndex of Int.min is capped instead of overflowing startIndex - 1")
    func googleStartIndexUnderflow() throws {
        // Given a next page that starts before the current one, at Int.min
        let body = #"{"kind":"customsearch#search","items":[{}],"queries":{"request":[{"startIndex":1}],"nextPage":[{"startIndex":-9223372036854775808}]}}"#

        // When it is parsed
        let page = try GoogleCustomSearchProvider(apiKey: "k", engineID: "cx").parse(response(200, body), cursor: .offset(0))

        // Then the walk stops there
        #expect(page.continuation == .capped)
        #expect(page.next == nil)
    }
}
