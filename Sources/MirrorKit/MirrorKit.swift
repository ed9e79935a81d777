// The library's API is MirrorKit's and that of the layers below it, which it re-exports: `import MirrorKit` is enough.
@_exported import MirrorConsent
@_exported import MirrorCore
@_exported import MirrorFetch
@_exported import MirrorImages
@_exported import MirrorModel
@_exported import MirrorObjectStore
@_exported import MirrorSearch
@_exported import MirrorStorage
@_exported import MirrorTables
@_exported import MirrorTransport  // the HTTPLoading a Pipeline or a SiteGate takes, and its one production driver

/// The version of this build of mirror.
public let version = MirrorVersion.current
