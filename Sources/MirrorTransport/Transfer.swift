import CCurl
import Foundation

/// One transfer: its libcurl easy handle, the request's settings, and the response as it arrives.
///
/// Built on the thread that starts the transfer, then handed to the driver thread through the
/// driver's inbox lock; from then on only the driver thread touches it (libcurl calls its
/// callbacks on that thread too). That hand-off is what makes the `@unchecked Sendable` true.
final class Transfer: @unchecked Sendable {
    typealias Completion = @Sendable (Result<HTTPResponse, TransportError>) -> Void

    /// The largest non-2xx body kept for file and sink destinations.
    static let errorBodyLimit = 64 * 1024

    let id: Int
    let handle: UnsafeMutableRawPointer
    let completion: Completion
    private let request: TransferRequest
    /// How long an idle connection may be kept for reuse (the driver's; nil: libcurl's 118 seconds).
    private let maximumConnectionAge: Duration?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var connectToList: UnsafeMutablePointer<curl_slist>?

    // MARK: Response state, written by the callbacks

    private var headers: [(name: String, value: String)] = []
    private var body = Data()
    private var bytesReceived: Int64 = 0
    private var acceptsBody: Bool?
    /// A failure detected inside a callback, which then aborts the transfer.
    private var callbackFailure: TransportError?
    /// Bytes of ``TransferRequest/upload`` handed to libcurl so far.
    private var uploadSent: Int64 = 0

    /// Creates the easy handle and sets every option; throws if libcurl refuses one.
    init(
        id: Int, request: TransferRequest, maximumConnectionAge: Duration?, completion: @escaping Completion
    ) throws(TransportError) {
        CurlRuntime.ensureInitialized()
        guard let handle = EasyHandles.shared.take() else {
            throw .other(CurlError(code: -1, summary: "curl_easy_init failed", message: ""))
        }
        self.id = id
        self.handle = handle
        self.request = request
        self.maximumConnectionAge = maximumConnectionAge
        self.completion = completion
        self.errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        do {
            try configure()
        } catch {
            cleanup()
            throw error
        }
    }

    /// How long the multi handle's DNS cache (shared by every transfer of the driver) keeps a host's addresses: an
    /// hour, not libcurl's minute, so that a table whose rows come back to a host over a long run does not ask the
    /// resolver again each time; not forever, since libcurl prunes its cache by age alone and a run over millions of
    /// hosts would keep every one (about 150 bytes each). A node-local caching resolver (SCALING.md) answers the rest.
    static let dnsCacheSeconds = 3_600

    private func configure() throws(TransportError) {
        let request = self.request
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        try set(CURLOPT_URL, request.url.absoluteString)
        try set(CURLOPT_NOSIGNAL, 1)
        // Policy: http and https only, for the first request and for every redirect.
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_FOLLOWLOCATION, 1)
        try set(CURLOPT_MAXREDIRS, request.maximumRedirects)
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, 2)
        if let certificates = request.trustedCertificates {
            try set(CURLOPT_CAINFO, certificates)
            try check(ccurl_easy_setopt_string(handle, CURLOPT_CAPATH, nil))
        } else if CurlRuntime.usesCABundleOnly {
            try check(ccurl_easy_setopt_string(handle, CURLOPT_CAPATH, nil))  // the bundle alone, parsed once and cached (CurlRuntime.usesCABundleOnly)
        }
        if let share = CurlRuntime.share {
            try set(CURLOPT_SHARE, pointer: share.pointer)
        }
        try set(CURLOPT_ACCEPT_ENCODING, "")
        try set(CURLOPT_USERAGENT, request.userAgent)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout))
        try set(CURLOPT_DNS_CACHE_TIMEOUT, Self.dnsCacheSeconds)
        if let total = request.totalTimeout {
            try set(CURLOPT_TIMEOUT_MS, Self.milliseconds(total))
        }
        try set(CURLOPT_LOW_SPEED_LIMIT, max(1, request.stall.minimumBytesPerSecond))
        try set(CURLOPT_LOW_SPEED_TIME, max(1, Int(request.stall.window.components.seconds)))
        try check(ccurl_easy_setopt_off_t(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maximumBodyBytes)))
        // Over HTTPS, wait for ALPN so that HTTP/2 streams share one connection. Not over plain HTTP:
        // there is no HTTP/2 to wait for, and waiting makes curl open extra HTTP/1.1 connections.
        if request.url.scheme?.lowercased() == "https" {
            try set(CURLOPT_PIPEWAIT, 1)
        }
        try set(CURLOPT_PRIVATE, pointer: UnsafeMutableRawPointer(bitPattern: id))
        if request.freshConnection { try set(CURLOPT_FRESH_CONNECT, 1) }
        if let age = maximumConnectionAge { try set(CURLOPT_MAXAGE_CONN, max(1, Int(age.components.seconds))) }

        let context = Unmanaged.passUnretained(self).toOpaque()
        try check(ccurl_easy_set_write_function(handle, transferWriteCallback))
        try set(CURLOPT_WRITEDATA, pointer: context)
        try check(ccurl_easy_set_header_function(handle, transferHeaderCallback))
        try set(CURLOPT_HEADERDATA, pointer: context)

        for (name, value) in request.headers {
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        if let headerList {
            try check(ccurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList))
        }
        for entry in request.connectTo {
            connectToList = curl_slist_append(connectToList, entry)
        }
        if let connectToList {
            try check(ccurl_easy_setopt_slist(handle, CURLOPT_CONNECT_TO, connectToList))
        }
        if let body = request.body {
            try check(ccurl_easy_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            // COPYPOSTFIELDS copies the bytes, so the pointer need only live through this call.
            let code = body.withUnsafeBytes { bytes in
                ccurl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            }
            try check(code)
        }
        if let upload = request.upload {
            try set(CURLOPT_UPLOAD, 1)
            try check(ccurl_easy_setopt_off_t(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(upload.length)))
            try check(ccurl_easy_set_read_function(handle, transferReadCallback))
            try set(CURLOPT_READDATA, pointer: context)
            uploadSent = 0
        }
        if let signature = request.awsSignature {
            try set(CURLOPT_AWS_SIGV4, signature.provider)
            try set(CURLOPT_USERNAME, signature.accessKeyID)
            try set(CURLOPT_PASSWORD, signature.secretAccessKey)
        }
        if request.method != "GET" && !(request.method == "POST" && request.body != nil) && !(request.method == "PUT" && request.upload != nil) {
            try set(CURLOPT_CUSTOMREQUEST, request.method)
        }
    }

    /// Frees the easy handle and everything the options point at. Idempotent is not needed: the driver calls it once.
    func cleanup() {
        EasyHandles.shared.give(handle)
        curl_slist_free_all(headerList)
        headerList = nil
        curl_slist_free_all(connectToList)
        connectToList = nil
        errorBuffer.deallocate()
    }

    // MARK: Callbacks (driver thread)

    /// Parses one header line as bytes (this runs for every header of every response, so no Foundation
    /// string work): a status line starts a new response; `Name: value` is kept with the name lowercased.
    fileprivate func receiveHeader(_ line: UnsafeBufferPointer<UInt8>) {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var end = line.count
        while end > 0, isSpace(line[end - 1]) { end -= 1 }
        guard end > 0 else { return }
        if end >= 5, line[0] == 0x48, line[1] == 0x54, line[2] == 0x54, line[3] == 0x50, line[4] == 0x2F {
            // "HTTP/": a new response (after a redirect or a 100 Continue): forget the previous one's headers.
            headers.removeAll(keepingCapacity: true)
            return
        }
        guard let colon = line[0..<end].firstIndex(of: 0x3A) else { return }
        var nameEnd = colon
        while nameEnd > 0, isSpace(line[nameEnd - 1]) { nameEnd -= 1 }
        var valueStart = colon + 1
        while valueStart < end, isSpace(line[valueStart]) { valueStart += 1 }
        let name = String(unsafeUninitializedCapacity: nameEnd) { buffer in
            for index in 0..<nameEnd {
                let byte = line[index]
                buffer[index] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
            }
            return nameEnd
        }
        let value = String(decoding: UnsafeBufferPointer(rebasing: line[valueStart..<end]), as: UTF8.self)
        headers.append((name, value))
    }

    fileprivate func receiveBody(_ chunk: UnsafeRawBufferPointer) -> Bool {
        bytesReceived += Int64(chunk.count)
        if bytesReceived > request.maximumBodyBytes {
            callbackFailure = .tooLarge(limit: request.maximumBodyBytes)
            return false
        }
        switch request.destination {
        case .memory:
            body.append(contentsOf: chunk)
            return true
        case let .file(descriptor):
            guard deliversBody() else { return keepErrorBody(chunk) }
            return writeAll(chunk, to: descriptor)
        case let .sink(sink):
            guard deliversBody() else { return keepErrorBody(chunk) }
            do {
                try sink.write(chunk)
                return true
            } catch {
                callbackFailure = .destinationFailed(String(describing: error))
                return false
            }
        }
    }

    /// Fills libcurl's upload buffer from the request's file range; 0 ends the body.
    fileprivate func readUpload(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let upload = request.upload else { return 0 }
        let wanted = min(Int64(buffer.count), upload.length - uploadSent)
        guard wanted > 0, let base = buffer.baseAddress else { return 0 }
        while true {
            let read = pread(upload.descriptor, base, Int(wanted), off_t(upload.offset + uploadSent))
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else {
                callbackFailure = .destinationFailed(read == 0 ? "the file to upload ended early" : String(cString: strerror(errno)))
                return Int(CURL_READFUNC_ABORT)
            }
            uploadSent += Int64(read)
            return read
        }
    }

    private func deliversBody() -> Bool {
        if let acceptsBody { return acceptsBody }
        var status = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        let accepts = (200..<300).contains(status)
        acceptsBody = accepts
        return accepts
    }

    private func keepErrorBody(_ chunk: UnsafeRawBufferPointer) -> Bool {
        let room = Self.errorBodyLimit - body.count
        if room > 0 { body.append(contentsOf: chunk.prefix(room)) }
        return true
    }

    private func writeAll(_ chunk: UnsafeRawBufferPointer, to descriptor: Int32) -> Bool {
        guard var pointer = chunk.baseAddress else { return true }
        var remaining = chunk.count
        while remaining > 0 {
            let written = write(descriptor, pointer, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                callbackFailure = .destinationFailed(String(cString: strerror(errno)))
                return false
            }
            remaining -= written
            pointer += written
        }
        return true
    }

    // MARK: Completion (driver thread)

    /// Turns libcurl's result code into this transfer's outcome.
    func outcome(for code: CURLcode) -> Result<HTTPResponse, TransportError> {
        if let callbackFailure { return .failure(callbackFailure) }
        guard code == CURLE_OK else { return .failure(error(for: code)) }
        return .success(response())
    }

    private func response() -> HTTPResponse {
        var status = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var redirects = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_REDIRECT_COUNT, &redirects)
        var connects = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        let effective = string(CURLINFO_EFFECTIVE_URL).flatMap(URL.init(string:)) ?? request.url
        return HTTPResponse(
            status: status,
            headers: headers,
            effectiveURL: effective,
            redirectCount: redirects,
            bytesReceived: bytesReceived,
            body: body,
            timings: HTTPResponse.Timings(
                nameLookup: duration(CURLINFO_NAMELOOKUP_TIME_T),
                connect: duration(CURLINFO_CONNECT_TIME_T),
                tlsHandshake: duration(CURLINFO_APPCONNECT_TIME_T),
                firstByte: duration(CURLINFO_STARTTRANSFER_TIME_T),
                total: duration(CURLINFO_TOTAL_TIME_T)
            ),
            connectionsOpened: connects
        )
    }

    private func error(for code: CURLcode) -> TransportError {
        let curlError = CurlError(code, message: String(cString: errorBuffer))
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .dnsFailure(host: request.url.host ?? "", curlError)
        case CURLE_COULDNT_CONNECT:
            return .connectFailed(curlError)
        case CURLE_OPERATION_TIMEDOUT:
            if curlError.message.contains("too slow") {
                return .stalled(
                    bytesPerSecond: request.stall.minimumBytesPerSecond,
                    seconds: Double(request.stall.window.components.seconds)
                )
            }
            // Connected when it connected now, or sent its request over a connection kept alive (whose connect
            // time is 0: a reused connection's timeout is not a connect failure).
            var connectTime: curl_off_t = 0
            _ = ccurl_easy_getinfo_off_t(handle, CURLINFO_CONNECT_TIME_T, &connectTime)
            var requestBytes = 0
            _ = ccurl_easy_getinfo_long(handle, CURLINFO_REQUEST_SIZE, &requestBytes)
            return connectTime == 0 && requestBytes == 0 ? .connectFailed(curlError) : .timedOut(curlError)
        case CURLE_TOO_MANY_REDIRECTS:
            return .tooManyRedirects(limit: request.maximumRedirects)
        case CURLE_UNSUPPORTED_PROTOCOL:
            // A redirect to (or a URL of) another scheme, which the protocol policy refuses; or, for an http(s) URL
            // with no redirect refused, an answer that was not HTTP at all ("Received HTTP/0.9 when not allowed"):
            // the bytes a previous response left past its length on a connection kept alive, or a server that is not
            // one. The second is the connection's fault, not the URL's.
            if let target = refusedRedirectTarget() { return .disallowedProtocol(url: target) }
            let scheme = request.url.scheme?.lowercased()
            guard scheme == "http" || scheme == "https" else { return .disallowedProtocol(url: request.url.absoluteString) }
            return .badResponse(curlError, reusedConnection: reusedConnection)
        case CURLE_WEIRD_SERVER_REPLY:
            return .badResponse(curlError, reusedConnection: reusedConnection)
        case CURLE_OUT_OF_MEMORY:
            // libcurl's length limits come back as running out of memory, with nothing in the error buffer: a request
            // over its 1 MiB request buffer (a URL that long), a response header line over 100 KiB (all of them over
            // 300 KiB). Say which it most likely was; the URL's length is known, a header line's is not.
            let urlBytes = request.url.absoluteString.utf8.count
            if urlBytes > Self.longestRequest {
                return .limitExceeded("the URL is \(urlBytes) bytes, longer than libcurl sends (a request of at most 1 MiB)")
            }
            return .limitExceeded("a response header line is longer than libcurl reads (100 KiB a line, 300 KiB in all), or memory ran out")
        case CURLE_FILESIZE_EXCEEDED:
            return .tooLarge(limit: request.maximumBodyBytes)
        case CURLE_PARTIAL_FILE:
            var expected: curl_off_t = -1
            _ = ccurl_easy_getinfo_off_t(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &expected)
            return .truncated(received: bytesReceived, expected: expected >= 0 ? Int64(expected) : nil)
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING:
            return .connectionLost(curlError)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
             CURLE_USE_SSL_FAILED:
            return .tls(curlError)
        default:
            return .other(curlError)
        }
    }

    /// libcurl's request buffer (`DYN_HTTP_REQUEST`, 1 MiB): a request line and headers past it fail to be built.
    static let longestRequest = 1 << 20

    /// Whether the transfer went over a connection kept alive from an earlier one (it opened none of its own).
    private var reusedConnection: Bool {
        var connects = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        return connects == 0
    }

    /// The `Location` a refused redirect pointed at, resolved against the URL that sent it.
    private func refusedRedirectTarget() -> String? {
        guard let location = headers.last(where: { $0.name == "location" })?.value else { return nil }
        let base = string(CURLINFO_EFFECTIVE_URL).flatMap(URL.init(string:)) ?? request.url
        return URL(string: location, relativeTo: base)?.absoluteString ?? location
    }

    // MARK: Helpers

    private func set(_ option: CURLoption, _ value: Int) throws(TransportError) {
        try check(ccurl_easy_setopt_long(handle, option, value))
    }

    private func set(_ option: CURLoption, _ value: String) throws(TransportError) {
        try check(ccurl_easy_setopt_string(handle, option, value))
    }

    private func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws(TransportError) {
        try check(ccurl_easy_setopt_pointer(handle, option, pointer))
    }

    private func check(_ code: CURLcode) throws(TransportError) {
        guard code == CURLE_OK else { throw .other(CurlError(code, message: "while configuring the transfer")) }
    }

    private func string(_ info: CURLINFO) -> String? {
        var pointer: UnsafeMutablePointer<CChar>?
        guard ccurl_easy_getinfo_string(handle, info, &pointer) == CURLE_OK, let pointer else { return nil }
        return String(cString: pointer)
    }

    private func duration(_ info: CURLINFO) -> Duration {
        var microseconds: curl_off_t = 0
        _ = ccurl_easy_getinfo_off_t(handle, info, &microseconds)
        return .microseconds(Int64(microseconds))
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}

// libcurl callbacks: C function pointers that capture nothing; the transfer travels as the context pointer.

private let transferWriteCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let accepted = transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: length))
    return accepted ? length : 0
}

private let transferReadCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return Int(CURL_READFUNC_ABORT) }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.readUpload(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
}

private let transferHeaderCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    data.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
        transfer.receiveHeader(UnsafeBufferPointer(start: bytes, count: length))
    }
    return length
}

/// libcurl easy handles, reset and reused from one transfer to the next: a new handle is several allocations and
/// libcurl's setting of every default, for each image (measured: libcurl's allocations were 4 % of a run's samples).
/// `curl_easy_reset` puts a handle back to its state when new, but for the caches it keeps, which the multi handle
/// owns here anyway. A handle is given back only once no multi handle holds it.
enum EasyHandles {
    static let shared = ReusePool<UnsafeMutableRawPointer>(
        limit: 256, make: { curl_easy_init() }, reset: { curl_easy_reset($0) }, discard: { curl_easy_cleanup($0) }
    )
}
