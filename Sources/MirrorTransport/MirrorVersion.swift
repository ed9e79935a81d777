/// The version of mirror, printed by `mirror --version` and sent in every `User-Agent` (`MirrorTransport` adds the
/// libcurl version there).
public enum MirrorVersion {
    /// The semantic version of this build.
    public static let current = "0.1.0"
}
