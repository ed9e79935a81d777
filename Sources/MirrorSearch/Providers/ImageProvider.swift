import Foundation

/// The fixed facts about a provider that do not depend on keys: its name, which variables it reads, where it lives.
public struct ProviderDescriptor: Sendable, Hashable {
    /// The registry name used by `--provider`, in the manifest and in file names, for example `"openverse"`.
    public var name: String
    /// The name shown to people, for example `"Wikimedia Commons"`.
    public var displayName: String
    /// The environment variables that must be set for the provider to work; empty when no key is needed.
    public var requiredEnvironment: [String]
    /// Environment variables the provider reads when present (for example Openverse client credentials); empty by default.
    public var optionalEnvironment: [String]
    /// The API endpoint used when neither `--endpoint` nor `endpointVariable` overrides it.
    public var defaultEndpoint: URL

    /// The variable that overrides the endpoint: `MIRROR_<NAME>_ENDPOINT`, for example `MIRROR_OPENVERSE_ENDPOINT`.
    public var endpointVariable: String { "MIRROR_\(name.uppercased())_ENDPOINT" }

    /// Creates a descriptor; `optionalEnvironment` defaults to empty.
    public init(name: String, displayName: String, requiredEnvironment: [String], optionalEnvironment: [String] = [], defaultEndpoint: URL) {
        self.name = name
        self.displayName = displayName
        self.requiredEnvironment = requiredEnvironment
        self.optionalEnvironment = optionalEnvironment
        self.defaultEndpoint = defaultEndpoint
    }
}

/// One image search API: turns a cursor and a query into an HTTP request, and an HTTP response into a page.
///
/// Providers are pure values: they never touch the network, the clock or the file system, so the same instance
/// can be used from any thread (`Sendable`) and is tested with recorded bodies alone. Status classification is
/// part of ``parse(_:cursor:)``: 401/403 that mean a bad key → ``ProviderError/authentication(variable:message:)``;
/// 429 (and 503 with `Retry-After`) → ``ProviderError/rateLimited(retryAfter:message:)``; 408 and 5xx →
/// ``ProviderError/transient(message:)``; other 4xx → ``ProviderError/permanent(message:)``; a 2xx body that is not
/// the expected JSON → ``ProviderError/transient(message:)``, because APIs glitch and a retry usually heals it.
///
/// ```swift
/// let provider = try OpenverseProvider.make(environment: ProcessInfo.processInfo.environment, endpointOverride: nil)
/// var cursor: PageCursor? = provider.initialCursor
/// while let current = cursor {
///     let request = try provider.request(for: current, query: SearchQuery(text: "kittens"))
///     let page = try provider.parse(await send(request), cursor: current)
///     cursor = page.next
/// }
/// ```
public protocol ImageProvider: Sendable {
    /// The provider's name, display name, key variables and default endpoint.
    static var descriptor: ProviderDescriptor { get }

    /// Builds the provider from environment variables: its keys, and `MIRROR_<NAME>_ENDPOINT` unless `endpointOverride` is given.
    /// - Throws: ``ProviderError/authentication(variable:message:)`` naming the first missing key variable;
    ///   ``ProviderError/configuration(message:)`` when the endpoint variable is not an absolute http(s) URL.
    static func make(environment: [String: String], endpointOverride: URL?) throws(ProviderError) -> Self

    /// The endpoint in use: the override given at creation, or ``ProviderDescriptor/defaultEndpoint``.
    var endpoint: URL { get }
    /// How many results one request asks for.
    var pageSize: Int { get }
    /// The smallest pause between two API requests that keeps within the API's published limits.
    var minimumRequestInterval: Duration { get }
    /// The cursor of the first page.
    var initialCursor: PageCursor { get }

    /// Builds the request for the page at `cursor`.
    /// - Throws: ``ProviderError/configuration(message:)`` when the cursor is of the wrong kind or beyond the provider's cap.
    func request(for cursor: PageCursor, query: SearchQuery) throws(ProviderError) -> APIRequest

    /// Turns the response to the request for `cursor` into a page, or classifies the failure.
    func parse(_ response: APIResponse, cursor: PageCursor) throws(ProviderError) -> SearchPage

    /// The request the provider's terms ask for when `result` has been saved (Unsplash requires a call to each
    /// photo's `download_location`), or `nil` when there is none (the default). Sent once per saved image —
    /// never for duplicates, filtered or failed ones — paced with the provider's search requests; its failure
    /// never fails the image.
    func downloadNotification(for result: ImageResult) -> APIRequest?

    /// Whether the provider must authenticate (fetch a token) before its first page. Default false.
    var needsAuthentication: Bool { get }

    /// The request that authenticates the provider (an OAuth token request); asked for only when
    /// ``needsAuthentication`` is true.
    func authenticationRequest() throws(ProviderError) -> APIRequest

    /// This provider, authenticated by the answer to ``authenticationRequest()``; classifies a refusal as
    /// ``ProviderError/authentication(variable:message:)``.
    func authenticated(by response: APIResponse) throws(ProviderError) -> any ImageProvider
}

extension ImageProvider {
    /// The registry name, for example `"openverse"`.
    public var name: String { Self.descriptor.name }
    /// The name shown to people.
    public var displayName: String { Self.descriptor.displayName }
    /// The environment variables that hold this provider's keys; empty when none is needed.
    public var requiredEnvironment: [String] { Self.descriptor.requiredEnvironment }
    /// The endpoint used when nothing overrides it.
    public var defaultEndpoint: URL { Self.descriptor.defaultEndpoint }

    /// No notification: only providers whose terms ask for one implement it.
    public func downloadNotification(for result: ImageResult) -> APIRequest? { nil }

    /// No authentication step: keys travel with every request.
    public var needsAuthentication: Bool { false }

    /// Never asked for when ``needsAuthentication`` is false.
    public func authenticationRequest() throws(ProviderError) -> APIRequest {
        throw .configuration(message: "\(Self.descriptor.displayName) has no authentication step")
    }

    /// Itself: there is nothing to authenticate.
    public func authenticated(by response: APIResponse) throws(ProviderError) -> any ImageProvider { self }
}

// MARK: - Environment helpers shared by the factories

extension ProviderDescriptor {
    /// Reads the required variable `name`, treating empty and blank values as missing.
    func requireKey(_ name: String, in environment: [String: String]) throws(ProviderError) -> String {
        guard let value = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            throw .authentication(
                variable: name,
                message: "\(displayName) needs an API key: set the environment variable \(name)"
            )
        }
        return value
    }

    /// Reads an optional variable, treating empty and blank values as missing.
    func optionalValue(_ name: String, in environment: [String: String]) -> String? {
        guard let value = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            return nil
        }
        return value
    }

    /// Picks the endpoint: `override` first, then `MIRROR_<NAME>_ENDPOINT`, else `nil` (the provider's default).
    package func endpoint(environment: [String: String], override: URL?) throws(ProviderError) -> URL? {
        if let override {
            try Self.validate(override, source: "--endpoint")
            return override
        }
        guard let text = optionalValue(endpointVariable, in: environment) else { return nil }
        guard let url = URL(string: text) else {
            throw .configuration(message: "\(endpointVariable) is not a valid URL")
        }
        try Self.validate(url, source: endpointVariable)
        return url
    }

    private static func validate(_ url: URL, source: String) throws(ProviderError) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw .configuration(message: "\(source) must be an absolute http or https URL")
        }
    }
}
