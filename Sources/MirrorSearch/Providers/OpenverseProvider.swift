import Foundation

/// Searches Openverse (`GET /v1/images/`), the openly licensed media index; no key needed.
///
/// - Cursor: `.page(n)`, 1-based. Openverse refuses pages above 20 (HTTP 400), so page 20 ends with
///   ``SearchPage/Continuation/capped``: 400 results anonymously (20 per page), 10,000 with a token (500 per page).
/// - Auth: optional. With `OPENVERSE_CLIENT_ID` and `OPENVERSE_CLIENT_SECRET` set, the caller sends
///   ``tokenRequest()``, reads the answer with ``parseToken(_:)`` and continues with ``authenticated(with:)``.
/// - Quirks: `filesize`, `filetype`, `width`, `height` may be null or absent (absent in the 2021 shape);
///   `result_count` saturates at 10,000; a 401 while anonymous means "page_size above 20", not a bad key.
public struct OpenverseProvider: ImageProvider {
    public static let descriptor = ProviderDescriptor(
        name: "openverse",
        displayName: "Openverse",
        requiredEnvironment: [],
        optionalEnvironment: ["OPENVERSE_CLIENT_ID", "OPENVERSE_CLIENT_SECRET"],
        defaultEndpoint: URL(string: "https://api.openverse.org/v1/images/")!
    )

    /// Registered client credentials, used only to request a token.
    public struct Credentials: Sendable, Hashable {
        /// The `client_id` from `/v1/auth_tokens/register/`.
        public var clientID: String
        /// The `client_secret` from `/v1/auth_tokens/register/`.
        public var clientSecret: String

        /// Creates credentials.
        public init(clientID: String, clientSecret: String) {
            self.clientID = clientID
            self.clientSecret = clientSecret
        }
    }

    /// A bearer token from `/v1/auth_tokens/token/` and how long it lives.
    public struct AccessToken: Sendable, Hashable {
        /// The `access_token` value, sent as `Authorization: Bearer …`.
        public var value: String
        /// The lifetime the server gave (`expires_in`), or `nil` if it gave none (Openverse says 36,000 s).
        public var expiresIn: Duration?

        /// Creates a token; `expiresIn` defaults to `nil`.
        public init(value: String, expiresIn: Duration? = nil) {
            self.value = value
            self.expiresIn = expiresIn
        }
    }

    /// Results per page anonymously: Openverse answers 401 above 20 without a token.
    public static let anonymousPageSize = 20
    /// Results per page with a token: the authenticated maximum, so the 20-page cap reaches all 10,000 results.
    public static let authenticatedPageSize = 500
    /// The deepest page Openverse serves (`MAX_PAGINATION_DEPTH`).
    public static let maximumPage = 20
    /// Where `result_count` saturates: a count this high means "at least this many".
    static let saturatedResultCount = 10_000

    public let endpoint: URL
    /// Client credentials for ``tokenRequest()``, or `nil` (the default) to search anonymously.
    public let credentials: Credentials?
    /// The bearer token sent with searches, or `nil` (the default) to search anonymously.
    public let accessToken: AccessToken?

    /// Creates the provider; `endpoint` defaults to ``ProviderDescriptor/defaultEndpoint``, and with no
    /// `accessToken` (the default) it searches anonymously.
    public init(endpoint: URL? = nil, credentials: Credentials? = nil, accessToken: AccessToken? = nil) {
        self.endpoint = endpoint ?? Self.descriptor.defaultEndpoint
        self.credentials = credentials
        self.accessToken = accessToken
    }

    /// Reads `OPENVERSE_CLIENT_ID`/`OPENVERSE_CLIENT_SECRET` (both or neither) and `MIRROR_OPENVERSE_ENDPOINT`.
    public static func make(environment: [String: String], endpointOverride: URL?) throws(ProviderError) -> Self {
        let endpoint = try descriptor.endpoint(environment: environment, override: endpointOverride)
        let id = descriptor.optionalValue("OPENVERSE_CLIENT_ID", in: environment)
        let secret = descriptor.optionalValue("OPENVERSE_CLIENT_SECRET", in: environment)
        switch (id, secret) {
        case (let id?, let secret?):
            return Self(endpoint: endpoint, credentials: Credentials(clientID: id, clientSecret: secret))
        case (nil, nil):
            return Self(endpoint: endpoint)
        case (nil, _?):
            throw .authentication(variable: "OPENVERSE_CLIENT_ID", message: "OPENVERSE_CLIENT_SECRET is set but OPENVERSE_CLIENT_ID is not")
        case (_?, nil):
            throw .authentication(variable: "OPENVERSE_CLIENT_SECRET", message: "OPENVERSE_CLIENT_ID is set but OPENVERSE_CLIENT_SECRET is not")
        }
    }

    /// The same provider sending `token` with every search.
    public func authenticated(with token: AccessToken) -> Self {
        Self(endpoint: endpoint, credentials: credentials, accessToken: token)
    }

    /// With client credentials and no token yet, a token is fetched before the first page.
    public var needsAuthentication: Bool { credentials != nil && accessToken == nil }

    /// The token request, ``tokenRequest()``.
    public func authenticationRequest() throws(ProviderError) -> APIRequest {
        try tokenRequest()
    }

    /// The provider with the token the response carries (``parseToken(_:)``).
    public func authenticated(by response: APIResponse) throws(ProviderError) -> any ImageProvider {
        authenticated(with: try parseToken(response))
    }

    public var pageSize: Int { accessToken == nil ? Self.anonymousPageSize : Self.authenticatedPageSize }

    /// 3 s anonymously: production allows 20 requests a minute (2024 tapes); 600 ms with a token (100 a minute).
    public var minimumRequestInterval: Duration { accessToken == nil ? .seconds(3) : .milliseconds(600) }

    public var initialCursor: PageCursor { .page(1) }

    private var secrets: [String] {
        [accessToken?.value, credentials?.clientID, credentials?.clientSecret].compactMap { $0 }
    }

    private var failure: ProviderFailure {
        ProviderFailure(
            context: nil,
            authVariable: accessToken == nil ? nil : "OPENVERSE_CLIENT_ID",
            secrets: secrets
        )
    }

    // MARK: - Token

    /// The token endpoint, `/v1/auth_tokens/token/` next to the images endpoint.
    public var tokenEndpoint: URL {
        var base = endpoint.absoluteString
        if let query = base.firstIndex(of: "?") { base = String(base[..<query]) }
        if !base.hasSuffix("/") { base += "/" }
        return URL(string: "../auth_tokens/token/", relativeTo: URL(string: base))?.absoluteURL ?? endpoint
    }

    /// The `POST /v1/auth_tokens/token/` request (`grant_type=client_credentials`) the caller sends before searching.
    /// - Throws: ``ProviderError/configuration(message:)`` when the provider has no credentials.
    public func tokenRequest() throws(ProviderError) -> APIRequest {
        guard let credentials else {
            throw .configuration(message: "a token needs OPENVERSE_CLIENT_ID and OPENVERSE_CLIENT_SECRET")
        }
        let body = ProviderURLBuilder.formBody([
            ("grant_type", "client_credentials"),
            ("client_id", credentials.clientID),
            ("client_secret", credentials.clientSecret),
        ])
        return APIRequest(
            url: tokenEndpoint,
            method: .post,
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: body,
            cacheKey: "POST " + tokenEndpoint.absoluteString
        )
    }

    /// Reads `{access_token, expires_in, token_type}` from the token response.
    /// - Throws: ``ProviderError/authentication(variable:message:)`` (naming `OPENVERSE_CLIENT_ID`) for 400/401/403,
    ///   the usual classification for other failures.
    public func parseToken(_ response: APIResponse) throws(ProviderError) -> AccessToken {
        let failure = ProviderFailure(context: "token request", authVariable: "OPENVERSE_CLIENT_ID", secrets: secrets)
        guard ProviderFailure.isSuccess(response.status) else {
            if response.status == 400 {
                // invalid_client / invalid_grant come back as 400 from the OAuth2 endpoint.
                throw .authentication(variable: "OPENVERSE_CLIENT_ID", message: failure.message("HTTP 400: " + ProviderFailure.detail(from: response.body, secrets: secrets)))
            }
            throw failure.classify(response)
        }
        let json = try failure.json(response)
        guard let token = json["access_token"]?.nonEmptyString else {
            throw failure.malformed("no access_token", body: response.body)
        }
        return AccessToken(value: token, expiresIn: json["expires_in"]?.int.map { .seconds($0) })
    }

    // MARK: - Search

    public func request(for cursor: PageCursor, query: SearchQuery) throws(ProviderError) -> APIRequest {
        guard case .page(let page) = cursor, page >= 1, page <= Self.maximumPage else {
            throw .configuration(message: "pages run from 1 to \(Self.maximumPage); cannot request \(cursor)")
        }
        var builder = ProviderURLBuilder()
        // Openverse truncates q at 200 characters itself; sending it whole keeps the cache key honest.
        builder.add("q", query.text)
        builder.add("page", page)
        builder.add("page_size", pageSize)
        let licenses = query.licenses.compactMap(Self.openverseLicense)
        if !licenses.isEmpty { builder.add("license", licenses.joined(separator: ",")) }
        let extensions = query.formats.compactMap(Self.openverseExtension)
        if !extensions.isEmpty { builder.add("extension", extensions.joined(separator: ",")) }
        var headers: [String: String] = ["Accept": "application/json"]
        if let accessToken { headers["Authorization"] = "Bearer \(accessToken.value)" }
        return APIRequest(
            url: try builder.url(endpoint: endpoint),
            headers: headers,
            cacheKey: try builder.cacheKey(endpoint: endpoint, secretNames: [], secretValues: secrets)
        )
    }

    public func parse(_ response: APIResponse, cursor: PageCursor) throws(ProviderError) -> SearchPage {
        let failure = self.failure
        guard ProviderFailure.isSuccess(response.status) else {
            if response.status == 401, accessToken == nil {
                // Anonymous 401 is DRF's NotAuthenticated for page_size > 20: our request, not a key, is wrong.
                throw .configuration(message: failure.message("HTTP 401 for an anonymous search (page_size above \(Self.anonymousPageSize)?): " + ProviderFailure.detail(from: response.body, secrets: secrets)))
            }
            throw failure.classify(response)
        }
        let json = try failure.json(response)
        guard let items = json["results"]?.array else {
            throw failure.malformed("no results array", body: response.body)
        }
        let results = items.compactMap(Self.result)
        let page = json["page"]?.int ?? { if case .page(let page) = cursor { return page } else { return 1 } }()
        let pageCount = json["page_count"]?.int ?? 0
        let resultCount = json["result_count"]?.int

        let continuation: SearchPage.Continuation
        if items.isEmpty {
            continuation = .exhausted
        } else if page >= pageCount {
            // page_count is lowered to the current page when a page comes back short; a saturated count
            // means more exist than Openverse will say.
            continuation = (resultCount ?? 0) >= Self.saturatedResultCount && page >= Self.maximumPage ? .capped : .exhausted
        } else if page >= Self.maximumPage {
            continuation = .capped
        } else {
            continuation = .more
        }
        return SearchPage(results: results, next: page.addingChecked(1).map(PageCursor.page), continuation: continuation, reportedTotal: resultCount)
    }

    static func result(_ item: ProviderJSON) -> ImageResult? {
        guard let id = item["id"]?.nonEmptyString, let imageURL = item["url"]?.url else { return nil }
        let filetype = item["filetype"]?.nonEmptyString
        let creator = ImageResult.Creator(name: item["creator"]?.nonEmptyString, url: item["creator_url"]?.url)
        return ImageResult(
            provider: descriptor.name,
            id: id,
            title: item["title"]?.nonEmptyString,
            pageURL: item["foreign_landing_url"]?.url,
            imageURL: imageURL,
            thumbnailURL: item["thumbnail"]?.url,
            width: item["width"]?.int,
            height: item["height"]?.int,
            byteSize: item["filesize"]?.int,
            mimeType: filetype.flatMap(ProviderText.mimeType(forExtension:)) ?? ProviderText.mimeType(forPathOf: imageURL),
            license: ImageResult.License.normalized(
                code: item["license"]?.nonEmptyString,
                version: item["license_version"]?.nonEmptyString,
                url: item["license_url"]?.nonEmptyString
            ),
            creator: creator.name == nil && creator.url == nil ? nil : creator,
            tags: item["tags"]?.array?.compactMap { $0["name"]?.nonEmptyString } ?? []
        )
    }

    /// Our licence code → Openverse's (`cc-by-sa` → `by-sa`).
    static func openverseLicense(_ code: String) -> String? {
        let code = code.lowercased()
        switch code {
        case "cc0", "pdm": return code
        default: return code.hasPrefix("cc-by") ? String(code.dropFirst(3)) : nil
        }
    }

    static func openverseExtension(_ format: String) -> String? {
        switch format.lowercased() {
        case "jpeg", "jpg": return "jpg"
        case "png", "gif", "webp", "svg": return format.lowercased()
        default: return nil
        }
    }
}
