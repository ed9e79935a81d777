import Foundation
import MirrorCore

/// Where objects go: `s3://BUCKET/PREFIX`, the prefix without its leading or trailing slash (possibly empty).
public struct S3Location: Sendable, Hashable, CustomStringConvertible {
    public var bucket: String
    public var prefix: String

    /// Parses `s3://bucket/some/prefix`; `nil` for anything that is not an `s3://` address with a bucket.
    public init?(_ text: String) {
        guard text.lowercased().hasPrefix("s3://") else { return nil }
        let rest = text.dropFirst(5)
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bucket = parts.first, !bucket.isEmpty else { return nil }
        self.bucket = String(bucket)
        prefix = parts.count > 1 ? String(parts[1]).trimmingCharacters(in: CharacterSet(charactersIn: "/")) : ""
    }

    public init(bucket: String, prefix: String) {
        self.bucket = bucket
        self.prefix = prefix
    }

    /// The key of `name` under the prefix.
    public func key(_ name: String) -> String { prefix.isEmpty ? name : prefix + "/" + name }

    /// The name of `key` under the prefix, or `nil` when the key is not directly under it.
    public func name(ofKey key: String) -> String? {
        let head = prefix.isEmpty ? "" : prefix + "/"
        guard key.hasPrefix(head) else { return nil }
        let name = key.dropFirst(head.count)
        return name.isEmpty || name.contains("/") ? nil : String(name)
    }

    public var description: String { "s3://\(bucket)" + (prefix.isEmpty ? "" : "/\(prefix)") }

    /// `$XDG_CACHE_HOME/mirror/state/BUCKET-PREFIX-HASH` (else `~/.cache/…`): one local state folder per destination,
    /// the endpoint included in the hash.
    public func defaultStateDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache")
        let readable = String((bucket + "-" + prefix).map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "-" }.prefix(60))
        let digest = sha256Hex(description + "|" + (environment["AWS_ENDPOINT_URL"] ?? "")).prefix(12)
        return cache.appendingPathComponent("mirror/state/\(readable)-\(digest)", isDirectory: true)
    }
}

/// How to reach and sign for an S3-compatible store, read from the AWS variables.
public struct S3Configuration: Sendable {
    /// `AWS_ENDPOINT_URL`: an S3-compatible store, addressed path-style (`ENDPOINT/BUCKET/KEY`), as botocore does for a
    /// custom endpoint; `nil` for AWS itself (`https://BUCKET.s3.REGION.amazonaws.com/KEY`).
    public var endpoint: URL?
    /// `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`.
    public var region = "us-east-1"
    public var accessKeyID: String
    public var secretAccessKey: String
    /// `AWS_SESSION_TOKEN`, sent (signed) as `x-amz-security-token`.
    public var sessionToken: String?
    /// Objects larger than this go up as multipart uploads of parts this size (`MIRROR_S3_PART_SIZE`; at least
    /// 5 MiB, S3's smallest part). Default 64 MiB.
    public var partSize: Int64 = 64 << 20
    /// Retries of a request that failed on the network or with 408, 429 or 5xx.
    public var retry = RetryPolicy(maximumRetries: 4, baseDelay: .milliseconds(500), maximumDelay: .seconds(20))

    public init(accessKeyID: String, secretAccessKey: String) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
    }

    /// Reads the AWS variables.
    /// - Throws: ``ObjectStoreError/missingCredentials(_:)`` naming the variable that is missing,
    ///   ``ObjectStoreError/badSetting(_:)`` for an endpoint or part size that does not parse.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(ObjectStoreError) -> S3Configuration {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        guard let key = value("AWS_ACCESS_KEY_ID") else { throw .missingCredentials("AWS_ACCESS_KEY_ID") }
        guard let secret = value("AWS_SECRET_ACCESS_KEY") else { throw .missingCredentials("AWS_SECRET_ACCESS_KEY") }
        var configuration = S3Configuration(accessKeyID: key, secretAccessKey: secret)
        configuration.sessionToken = value("AWS_SESSION_TOKEN")
        configuration.region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? "us-east-1"
        if let endpoint = value("AWS_ENDPOINT_URL") {
            guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                throw .badSetting("AWS_ENDPOINT_URL \(endpoint) is not an http(s) URL")
            }
            configuration.endpoint = url
        }
        if let text = value("MIRROR_S3_PART_SIZE") {
            guard let size = Int64(text), size >= 5 << 20 else {
                throw .badSetting("MIRROR_S3_PART_SIZE \(text): give a number of bytes of at least 5242880 (5 MiB)")
            }
            configuration.partSize = size
        }
        return configuration
    }
}

/// What went wrong with object storage, said so that the user knows what to do.
public enum ObjectStoreError: Error, Sendable, CustomStringConvertible {
    /// A credential variable is not set.
    case missingCredentials(String)
    /// A setting does not parse.
    case badSetting(String)
    /// The store refused the credentials or the signature (`SignatureDoesNotMatch`, `InvalidAccessKeyId`, …).
    case rejected(code: String, location: String)
    /// The bucket does not exist.
    case noSuchBucket(String, endpoint: String)
    /// A request failed after its retries.
    case failed(operation: String, key: String, reason: String, transient: Bool)

    public var description: String {
        switch self {
        case let .missingCredentials(name):
            return "\(name) is not set: writing to s3:// needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment"
        case let .badSetting(message):
            return message
        case let .rejected(code, location):
            return "\(location) refused the credentials (\(code)): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                + " (and AWS_SESSION_TOKEN, AWS_REGION)"
        case let .noSuchBucket(bucket, endpoint):
            return "bucket \(bucket) does not exist at \(endpoint): create it, or correct --out"
        case let .failed(operation, key, reason, _):
            return "could not \(operation) \(key): \(reason)"
        }
    }

    /// Whether the failure is the credentials' or the settings' (exit 4) rather than the store's.
    public var isConfiguration: Bool {
        switch self {
        case .missingCredentials, .badSetting, .rejected, .noSuchBucket: return true
        case .failed: return false
        }
    }

    /// Whether a later run may succeed without any change (a network failure, a 5xx).
    public var isTransient: Bool {
        if case let .failed(_, _, _, transient) = self { return transient }
        return false
    }
}
