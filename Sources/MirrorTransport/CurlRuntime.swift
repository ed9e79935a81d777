import CCurl
import Foundation

/// The version of mirror, sent in every `User-Agent` and printed by `mirror --version`.
public enum MirrorVersion {
    /// The semantic version of this build.
    public static let current = "0.1.0"

    /// The default `User-Agent`: `mirror/<version> libcurl/<version>`.
    public static let userAgent = "mirror/\(current) libcurl/\(CurlRuntime.libcurlVersion)"
}

/// Process-wide libcurl set-up, done exactly once before the first handle is made.
///
/// `curl_global_init` is not thread-safe on every libcurl build, so it runs inside the lazy
/// initialiser of a global (Swift runs those exactly once, under a lock). `SIGPIPE` is ignored
/// because every handle sets `CURLOPT_NOSIGNAL` (required with threads), after which curl no longer
/// ignores it on our behalf. `curl_global_cleanup` is never called: a process may still have
/// handles being torn down while it exits (see the libcurl notes, trap 24).
package enum CurlRuntime {
    private static let initialized: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    }()

    /// Initialises libcurl once; later calls cost one load.
    package static func ensureInitialized() {
        precondition(initialized, "curl_global_init failed")
    }

    /// The libcurl version string, such as `7.88.1`.
    package static let libcurlVersion: String = {
        ensureInitialized()
        guard let info = curl_version_info(ccurl_version_now()), let version = info.pointee.version else {
            return "unknown"
        }
        return String(cString: version)
    }()
}
