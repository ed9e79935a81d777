import Foundation

/// The list of every provider `mirror` knows, looked up by name.
///
/// Order is the order `mirror providers` prints. The default chain is ``defaultNames`` (`openverse`, `wikimedia`),
/// the two providers that need no key.
public enum ProviderRegistry {
    /// Every provider type, in display order.
    public static let all: [any ImageProvider.Type] = [
        OpenverseProvider.self,
        WikimediaCommonsProvider.self,
        FlickrProvider.self,
        GiphyProvider.self,
        GoogleCustomSearchProvider.self,
        PexelsProvider.self,
        UnsplashProvider.self,
        PixabayProvider.self,
    ]

    /// The providers used when `--provider` is not given: the ones that need no key.
    public static let defaultNames = ["openverse", "wikimedia"]

    /// The descriptors of every provider, in display order.
    public static var descriptors: [ProviderDescriptor] { all.map { $0.descriptor } }

    /// Every registry name, in display order.
    public static var names: [String] { all.map { $0.descriptor.name } }

    /// The provider type called `name` (case-insensitive), or `nil`.
    public static func type(named name: String) -> (any ImageProvider.Type)? {
        let wanted = name.lowercased()
        return all.first { $0.descriptor.name == wanted }
    }

    /// Builds the provider called `name` from the environment.
    /// - Throws: ``ProviderError/configuration(message:)`` for an unknown name, or whatever the provider's factory throws.
    public static func make(
        named name: String,
        environment: [String: String],
        endpointOverride: URL? = nil
    ) throws(ProviderError) -> any ImageProvider {
        guard let type = type(named: name) else {
            throw .configuration(message: "unknown provider \"\(name)\"; known providers: \(names.joined(separator: ", "))")
        }
        return try type.make(environment: environment, endpointOverride: endpointOverride)
    }
}
