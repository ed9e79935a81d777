// libFuzzer harness for the eight providers' `parse(_:cursor:)`, driven through `SearchPaginator`.
//
// Not part of Package.swift: `scripts/fuzz/fuzz` compiles it with `-sanitize=fuzzer,address -parse-as-library`
// against MirrorKit built in `.build-fuzz` with testing enabled (for the internal helpers).
//
// Input layout (so one corpus covers every provider and multi-page walks):
//
//     [provider] segment ( "\n%%\n" segment )*        segment = [status] [headers] body
//
// - `provider`: index into `providers` (mod 8).
// - `status`: index into `statuses` (mod count); 0 is 200.
// - `headers`: bit 0 adds a `Retry-After` (value picked by bits 1–3), bit 4 a `Date`.
// - `body`: the API response body, seeded from `Tests/MirrorKitTests/Fixtures/<provider>/*.json`.
//
// Each segment answers the request the paginator asks for next, so the cursors the parsers return (page + 1,
// offsets, continuation tokens from the body) are fed back into them. Invariants: the paginator never yields a
// URL twice, its counters add up, and every error and result can be described.
import Foundation
@testable import MirrorKit
@testable import MirrorCore
@testable import MirrorFetch
@testable import MirrorSearch
@testable import MirrorStorage

let providers: [any ImageProvider] = [
    OpenverseProvider(),
    WikimediaCommonsProvider(),
    FlickrProvider(apiKey: "fuzz-flickr-key-0123456789"),
    GiphyProvider(apiKey: "fuzz-giphy-key-0123456789"),
    GoogleCustomSearchProvider(apiKey: "fuzz-google-key-0123456789", engineID: "fuzz-cx"),
    PexelsProvider(apiKey: "fuzz-pexels-key-0123456789"),
    UnsplashProvider(accessKey: "fuzz-unsplash-key-0123456789"),
    PixabayProvider(apiKey: "fuzz-pixabay-key-0123456789"),
]

let statuses = [200, 201, 204, 206, 301, 400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504, 100, 0, -1, 999]

let retryAfterValues = [
    "120", "0", "-5", "1.5", "1e300", "99999999999999999999", "9223372036854775807",
    "Wed, 21 Oct 2015 07:28:00 GMT",
]

let separator = Array("\n%%\n".utf8)

/// Splits `bytes` at every `separator`.
func segments(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
    var result: [ArraySlice<UInt8>] = []
    var start = bytes.startIndex
    var index = bytes.startIndex
    while index + separator.count <= bytes.endIndex {
        if bytes[index..<index + separator.count].elementsEqual(separator) {
            result.append(bytes[start..<index])
            index += separator.count
            start = index
        } else {
            index += 1
        }
    }
    result.append(bytes[start..<bytes.endIndex])
    return result
}

func response(from segment: ArraySlice<UInt8>) -> APIResponse {
    var rest = segment
    let status = statuses[Int(rest.popFirst() ?? 0) % statuses.count]
    let flags = rest.popFirst() ?? 0
    var headers: [String: String] = ["Content-Type": "application/json"]
    if flags & 1 != 0 { headers["Retry-After"] = retryAfterValues[Int(flags >> 1 & 7)] }
    if flags & 16 != 0 { headers["Date"] = "Wed, 21 Oct 2015 07:27:00 GMT" }
    return APIResponse(status: status, headers: headers, body: Data(rest))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProviders(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard count > 0, let start else { return 0 }
    let bytes = ArraySlice(UnsafeRawBufferPointer(start: start, count: count))
    let provider = providers[Int(bytes[bytes.startIndex]) % providers.count]
    let pages = segments(bytes.dropFirst()).prefix(16)

    var paginator = SearchPaginator(
        initialCursor: provider.initialCursor,
        configuration: .init(pageLimit: 12, retry: RetryPolicy(maximumRetries: 2)),
        seed: 42
    )
    var now = ContinuousClock.now
    var yielded = Set<String>()
    var offered = 0
    for segment in pages {
        guard case .fetch(let cursor) = paginator.wantMore(now: now) else { break }
        let action: SearchPaginator.Action
        do {
            let page = try provider.parse(response(from: segment), cursor: cursor)
            offered += page.results.count
            for result in page.results { _ = String(describing: result) }
            action = paginator.pageArrived(page)
        } catch {
            _ = error.description
            _ = error.isRetryable
            action = paginator.errorArrived(error, now: now)
        }
        switch action {
        case .yield(let results):
            for result in results {
                precondition(yielded.insert(CacheKey(url: result.imageURL).normalizedURL).inserted, "yielded twice")
            }
        case .wait(let delay):
            // Jump the synthetic clock past the wait; absurd hints are the retry policy's to refuse.
            if delay < .seconds(86_400 * 365) { now = now.advanced(by: delay) } else { return 0 }
        case .fetch, .finish:
            break
        }
        if paginator.isFinished { break }
    }
    precondition(paginator.resultsYielded + paginator.duplicates == offered, "paginator counters do not add up")
    precondition(paginator.resultsYielded == yielded.count, "paginator yielded count is off")
    return 0
}
