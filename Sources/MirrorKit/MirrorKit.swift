import MirrorTransport

/// The version of this build of mirror.
public let version = MirrorVersion.current
