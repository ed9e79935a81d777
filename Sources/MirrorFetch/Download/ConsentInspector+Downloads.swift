import MirrorConsent

extension ConsentInspector {
    /// An inspector whose requests are a run's downloads' (``DownloadManager/Configuration``): the same `User-Agent`,
    /// `--connect-to`, timeouts, byte and pixel limits.
    public init(policy: ConsentPolicy, downloads: DownloadManager.Configuration = DownloadManager.Configuration()) {
        self.init(policy: policy, request: downloads.transferTemplate, siteTimeout: downloads.timeout, pixelLimit: downloads.pixelLimit)
    }
}
