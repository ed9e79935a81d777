import Crypto
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import MirrorTransport
import MirrorCore

/// The S3 calls mirror makes — list, put (whole or multipart), get, delete, and the multipart clean-up — over the run's
/// libcurl transport, signed by libcurl (`CURLOPT_AWS_SIGV4`).
///
/// libcurl 7.88 signs what it is given: the query goes out sorted and percent-encoded, keys are encoded segment by
/// segment, and `x-amz-content-sha256` is computed here (an upload's range is hashed before it is sent). A request that
/// fails on the network or with 408, 429 or 5xx is retried with backoff; 403s are the credentials' fault and are not.
public final class S3Client: Sendable {
    public let location: S3Location
    public let configuration: S3Configuration
    private let loader: any HTTPLoading
    private let sleeper: Sleeper

    /// One object of a listing.
    public struct Object: Sendable, Hashable {
        public var key: String
        public var size: Int64
    }

    /// A multipart upload that was started and neither completed nor aborted.
    public struct Upload: Sendable, Hashable {
        public var key: String
        public var id: String
    }

    public init(location: S3Location, configuration: S3Configuration, loader: any HTTPLoading, sleeper: Sleeper = .real) {
        self.location = location
        self.configuration = configuration
        self.loader = loader
        self.sleeper = sleeper
    }

    // MARK: Calls

    /// Every object whose key starts with `prefix` (pages of 1,000 followed to the end).
    ///
    /// The prefix goes out as given: real S3 wants an inner `/` encoded, which moto 5.2 refuses to verify, so callers
    /// list with the location's prefix (no trailing slash) and filter the names.
    public func listObjects(prefix: String) async throws(ObjectStoreError) -> [Object] {
        var objects: [Object] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let response = try await send("GET", key: nil, query: query, operation: "list", subject: location.description)
            let values = S3XML.elements(in: response.body, named: ["Contents", "Key", "Size", "IsTruncated", "NextContinuationToken"])
            var key: String?
            var size: Int64 = 0
            // Each <Contents> ends a group; its children may come in any order.
            for (name, text) in values {
                switch name {
                case "Key": key = text
                case "Size": size = Int64(text) ?? 0
                case "Contents":
                    if let key { objects.append(Object(key: key, size: size)) }
                    key = nil
                    size = 0
                default: break
                }
            }
            let truncated = values.last { $0.name == "IsTruncated" }?.text == "true"
            token = truncated ? values.last { $0.name == "NextContinuationToken" }?.text : nil
        } while token != nil
        return objects
    }

    /// Multipart uploads in progress under `prefix` (pages of 1,000 followed to the end).
    public func listUploads(prefix: String) async throws(ObjectStoreError) -> [Upload] {
        var uploads: [Upload] = []
        var markers: (key: String, id: String)?
        repeat {
            var query = [("prefix", prefix), ("uploads", "")]
            if let markers { query += [("key-marker", markers.key), ("upload-id-marker", markers.id)] }
            let response = try await send("GET", key: nil, query: query, operation: "list uploads of", subject: location.description)
            let values = S3XML.elements(in: response.body, named: ["Upload", "Key", "UploadId", "IsTruncated", "NextKeyMarker", "NextUploadIdMarker"])
            var key: String?
            var id: String?
            // Each <Upload> ends a group; moto writes its UploadId before its Key, S3 the other way round.
            for (name, text) in values {
                switch name {
                case "Key": key = text
                case "UploadId": id = text
                case "Upload":
                    if let key, let id { uploads.append(Upload(key: key, id: id)) }
                    key = nil
                    id = nil
                default: break
                }
            }
            let truncated = values.last { $0.name == "IsTruncated" }?.text == "true"
            if truncated, let nextKey = values.last(where: { $0.name == "NextKeyMarker" })?.text,
               let nextID = values.last(where: { $0.name == "NextUploadIdMarker" })?.text, (nextKey, nextID) != (markers?.key, markers?.id) {
                markers = (nextKey, nextID)
            } else {
                markers = nil
            }
        } while markers != nil
        return uploads
    }

    /// Abandons a multipart upload (its parts are deleted).
    public func abort(_ upload: Upload) async throws(ObjectStoreError) {
        _ = try await send("DELETE", key: upload.key, query: [("uploadId", upload.id)], operation: "abort the upload of", accepting: [204, 200, 404])
    }

    /// Deletes an object (a missing one is not an error).
    public func delete(key: String) async throws(ObjectStoreError) {
        _ = try await send("DELETE", key: key, operation: "delete", accepting: [204, 200, 404])
    }

    /// Reads an object whole.
    public func get(key: String) async throws(ObjectStoreError) -> Data {
        try await send("GET", key: key, operation: "read").body
    }

    /// Uploads a file as `key`: one `PUT` up to the part size, a multipart upload above it (aborted if any part fails).
    public func put(file: URL, key: String, contentType: String) async throws(ObjectStoreError) {
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw .failed(operation: "read", key: file.path, reason: String(cString: strerror(errno)), transient: false)
        }
        defer { close(descriptor) }
        var status = stat()
        fstat(descriptor, &status)
        let size = Int64(status.st_size)
        let headers = [("Content-Type", contentType)]
        if size <= configuration.partSize {
            let range = FileRange(descriptor: descriptor, offset: 0, length: size)
            _ = try await send("PUT", key: key, headers: headers, upload: range, operation: "upload")
            return
        }
        let created = try await send("POST", key: key, query: [("uploads", "")], headers: headers, body: Data(), operation: "start the upload of")
        guard let id = S3XML.elements(in: created.body, named: ["UploadId"]).first?.text else {
            throw .failed(operation: "start the upload of", key: key, reason: "no UploadId in the response", transient: false)
        }
        let upload = Upload(key: key, id: id)
        do throws(ObjectStoreError) {
            var tags: [String] = []
            var offset: Int64 = 0
            while offset < size {
                let length = min(configuration.partSize, size - offset)
                let range = FileRange(descriptor: descriptor, offset: offset, length: length)
                let query = [("partNumber", String(tags.count + 1)), ("uploadId", id)]
                let response = try await send("PUT", key: key, query: query, upload: range, operation: "upload part \(tags.count + 1) of")
                guard let tag = response.etag else {
                    throw .failed(operation: "upload part \(tags.count + 1) of", key: key, reason: "no ETag in the response", transient: true)
                }
                tags.append(tag)
                offset += length
            }
            var xml = "<CompleteMultipartUpload>"
            for (index, tag) in tags.enumerated() {
                xml += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(S3XML.escaped(tag))</ETag></Part>"
            }
            xml += "</CompleteMultipartUpload>"
            let completed = try await send("POST", key: key, query: [("uploadId", id)], headers: [("Content-Type", "application/xml")], body: Data(xml.utf8), operation: "complete the upload of")
            // S3 may answer 200 and then report a failure in the body.
            if let code = S3XML.elements(in: completed.body, named: ["Code"]).first?.text {
                throw .failed(operation: "complete the upload of", key: key, reason: code, transient: code == "InternalError" || code == "SlowDown")
            }
        } catch {
            try? await abort(upload)
            throw error
        }
    }

    // MARK: One request, with retries

    private func send(
        _ method: String, key: String?, query: [(String, String)] = [], headers: [(String, String)] = [],
        body: Data? = nil, upload: FileRange? = nil, operation: String, subject: String? = nil, accepting: Set<Int> = []
    ) async throws(ObjectStoreError) -> HTTPResponse {
        let subject = subject ?? key.map { "s3://\(location.bucket)/\($0)" } ?? location.description
        var request = TransferRequest(url: url(key: key, query: query))
        request.method = method
        request.body = body
        request.upload = upload
        request.maximumBodyBytes = 1 << 30
        request.stall = .init(minimumBytesPerSecond: 1, window: .seconds(60))
        request.awsSignature = AWSSignature(region: configuration.region, accessKeyID: configuration.accessKeyID, secretAccessKey: configuration.secretAccessKey)
        let payloadHash: String
        if let upload {
            payloadHash = try Self.sha256(of: upload, key: subject)
        } else {
            payloadHash = sha256Hex(body ?? Data())
        }
        request.headers = headers + [("x-amz-content-sha256", payloadHash)]
        if let token = configuration.sessionToken { request.headers.append(("x-amz-security-token", token)) }
        // The server's Retry-After of the last attempt's answer, if it sent one.
        var retryAfter: Duration?
        return try await configuration.retry.run(using: sleeper) { () async throws(ObjectStoreError) -> HTTPResponse in
            retryAfter = nil
            let response: HTTPResponse
            do {
                response = try await loader.perform(request)
            } catch {
                throw .failed(operation: operation, key: subject, reason: "\(error)", transient: true)
            }
            if (200..<300).contains(response.status) || accepting.contains(response.status) { return response }
            let code = S3XML.elements(in: response.body, named: ["Code"]).first?.text ?? "HTTP \(response.status)"
            if response.status == 403 || (response.status == 400 && code.contains("Token")) || code == "InvalidAccessKeyId" {
                throw .rejected(code: code, location: subject)
            }
            if code == "NoSuchBucket" {
                throw .noSuchBucket(location.bucket, endpoint: configuration.endpoint?.absoluteString ?? "AWS \(configuration.region)")
            }
            retryAfter = response.retryAfter()
            let transient = RetryPolicy.isRetryable(status: response.status)
            throw .failed(operation: operation, key: subject, reason: "\(code) (HTTP \(response.status))", transient: transient)
        } isRetryable: { $0.isTransient } retryAfter: { _ in retryAfter }
    }

    /// The request URL: path-style under a custom endpoint, virtual-hosted on AWS; the query sorted by name, as
    /// SigV4's canonical request lists it (libcurl 7.88 signs the query as it is sent).
    package func url(key: String?, query: [(String, String)]) -> URL {
        var text: String
        if let endpoint = configuration.endpoint {
            var base = endpoint.absoluteString
            while base.hasSuffix("/") { base.removeLast() }
            text = base + "/" + Self.encoded(location.bucket, keepingSlashes: false)
            if let key { text += "/" + Self.encoded(key, keepingSlashes: true) }
        } else {
            text = "https://\(location.bucket).s3.\(configuration.region).amazonaws.com/"
            if let key { text += Self.encoded(key, keepingSlashes: true) }
        }
        if !query.isEmpty {
            let pairs = query.map { (Self.encoded($0.0, keepingSlashes: false), Self.encoded($0.1, keepingSlashes: false)) }
            text += "?" + pairs.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        }
        return URL(string: text)!
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters (and `/` in a key's path).
    package static func encoded(_ text: String, keepingSlashes: Bool) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlashes:
                result += "/"
            default:
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }

    private static func sha256(of range: FileRange, key: String) throws(ObjectStoreError) -> String {
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset = range.offset
        let end = range.offset + range.length
        while offset < end {
            let wanted = Int(min(Int64(buffer.count), end - offset))
            let read = buffer.withUnsafeMutableBytes { pread(range.descriptor, $0.baseAddress, wanted, off_t(offset)) }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else {
                throw .failed(operation: "read", key: key, reason: read == 0 ? "the file ended early" : String(cString: strerror(errno)), transient: false)
            }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<read])) }
            offset += Int64(read)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}

/// The few values mirror reads from S3's XML answers, through Foundation's `XMLParser`.
enum S3XML {
    /// The text of every element with one of `names`, in the order the elements end (a container's entry comes after
    /// its children's, so it can close a group; its text is meaningless).
    package static func elements(in data: Data, named names: Set<String>) -> [(name: String, text: String)] {
        guard !data.isEmpty else { return [] }
        let collector = Collector(names: names)
        let parser = XMLParser(data: data)
        parser.delegate = collector
        _ = parser.parse()  // a malformed answer yields what was found before the error
        return collector.found
    }

    /// `text` with XML's five special characters escaped.
    package static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&apos;")
    }

    private final class Collector: NSObject, XMLParserDelegate {
        let names: Set<String>
        var found: [(name: String, text: String)] = []
        private var text = ""

        init(names: Set<String>) {
            self.names = names
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            text = ""
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            text += string
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if names.contains(name) { found.append((name, text)) }
            text = ""
        }
    }
}
