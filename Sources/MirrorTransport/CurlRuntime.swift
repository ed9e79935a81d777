import CCurl
import Foundation

extension MirrorVersion {
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

extension CurlRuntime {
    /// Whether every transfer leaves libcurl's CA *path* unset: true when the built-in CA *bundle* is readable.
    ///
    /// Debian's libcurl sets both a bundle (`/etc/ssl/certs/ca-certificates.crt`) and a path (`/etc/ssl/certs`), and
    /// its CA cache (`CURLOPT_CA_CACHE_TIMEOUT`, libcurl ≥ 7.87, on by default) is used only when no path is set: so
    /// every new TLS connection parsed the bundle's ~140 certificates again, about 25 ms of CPU (OpenSSL 3's PEM
    /// decoder, mostly in its provider locks). Without the path the bundle is parsed once per driver thread and kept;
    /// verification is unchanged, by the same certificates (the bundle is the path's certificates, concatenated).
    package static let usesCABundleOnly: Bool = {
        ensureInitialized()
        guard let info = curl_version_info(ccurl_version_now()), let bundle = info.pointee.cainfo else { return false }
        return access(bundle, R_OK) == 0
    }()

    /// The share handle of every transfer in the process: TLS sessions and DNS answers, so that a connection to a host
    /// another driver thread talked to resumes its TLS session, and a host is looked up once, not once per thread.
    /// (Connections stay each thread's own: a host's transfers go to one thread, `CurlMultiDriver`.) Like libcurl's
    /// global state, never freed: transfers may still be ending while the process exits.
    package static let share: ShareHandle? = {
        ensureInitialized()
        guard let share = curl_share_init() else { return nil }
        let count = Int(ccurl_share_lock_count())
        let locks = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: count)
        for index in 0..<count { pthread_mutex_init(locks + index, nil) }
        for data in [CURL_LOCK_DATA_SSL_SESSION, CURL_LOCK_DATA_DNS] where ccurl_share_setup(share, locks, data) != CURLSHE_OK {
            return nil
        }
        return ShareHandle(pointer: share)
    }()

    /// A libcurl share handle. `@unchecked Sendable`: libcurl takes the share's own locks (`ccurl_share_lock`, a mutex
    /// per kind of data) around every use of it, from whichever thread's transfer uses it.
    package struct ShareHandle: @unchecked Sendable {
        package let pointer: UnsafeMutableRawPointer
    }
}
