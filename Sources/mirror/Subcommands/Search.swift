import ArgumentParser
import Foundation
import MirrorImages
import MirrorKit

/// `mirror [search] <query> --count N --out DIR`: the main job.
struct Search: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fill a folder with exactly N verified images found by a search query (the default command).",
        discussion: """
        The folder ends with COUNT valid, distinct images (or all that the sources have, exit 3). Re-running \
        a finished job makes no request; a higher --count fetches only the difference; a killed run resumes. \
        A --count over 9,000 fills numbered subfolders of 1,000 (00000/, 00001/, …), so that no folder passes the \
        Hugging Face Hub's 10,000 files (--layout); DIR/metadata.jsonl, a copy of DIR/manifest.jsonl, is what \
        datasets' imagefolder reads.

        Providers (see 'mirror providers'): openverse and wikimedia need no key; flickr, giphy, google, pexels, \
        unsplash and pixabay read their keys from the environment.
        """
    )

    @Argument(help: "The search query (several words are joined with spaces).")
    var query: [String] = []

    @Option(help: "A file of queries, one a line: each gets its own subfolder of --count images, labelled by the query.")
    var queries: String?

    @Flag(help: "With --queries: keep an image found by two queries only in the first one's folder.")
    var uniqueAcrossQueries = false

    @Option(help: "What is a duplicate of a saved image: near (the same picture resized, re-encoded or trimmed, by its PDQ hash; the default), exact (the same bytes) or none.")
    var dedup: Deduplication = .near(NearDuplicatePolicy())

    @Option(help: "How many images the folder (with --queries: each query's subfolder) should hold (1–100000).")
    var count: Int

    @Option(name: .customLong("out"), help: "The output folder (created if missing).")
    var output: String

    @Option(name: .customLong("provider"), help: "Providers in chain order, comma-separated.")
    var providers: String = ProviderRegistry.defaultNames.joined(separator: ",")

    @Option(help: "Pages fetched per provider at most.")
    var pages: Int?

    @Option(help: "The full URL of the provider's search endpoint (one provider only); also MIRROR_<PROVIDER>_ENDPOINT.")
    var endpoint: String?

    @Option(name: .customLong("min-width"), help: "Skip images narrower than this.")
    var minWidth: Int = 0

    @Option(name: .customLong("min-height"), help: "Skip images shorter than this.")
    var minHeight: Int = 0

    @Option(name: .customLong("type"), help: "Wanted formats, comma-separated: jpeg,png,gif,webp,bmp,tiff,avif,heif.")
    var types: String?

    @Option(name: .customLong("license"), help: "Wanted licences, comma-separated (e.g. cc0,by,by-sa), for providers that filter by licence.")
    var licenses: String?

    @Option(help: "File name template: {provider} {id} {title} {index} {sha8} {ext}.")
    var name: String?

    @Option(name: .customLong("api-retries"), help: "Retries of a failed API request — a search page, a token, a download notification — (0–10), with backoff and Retry-After honoured; --retries is for images.")
    var apiRetries: Int = 3

    @Flag(name: .customLong("dry-run"), help: "Print the image URLs that would be fetched, one a line; download nothing.")
    var dryRun = false

    @OptionGroup var network: NetworkOptions
    @OptionGroup var agent: AgentOptions
    @OptionGroup var cache: CacheOptions
    @OptionGroup var outputOptions: OutputOptions
    @OptionGroup var folder: FolderOptions
    @OptionGroup(title: "What the owner reserved") var consent: ConsentOptions
    @OptionGroup(title: "With --queries, on a cluster") var sharding: ShardOptions

    var queryText: String { query.joined(separator: " ").trimmingCharacters(in: .whitespaces) }

    func validate() throws {
        if queries != nil {
            guard queryText.isEmpty else { throw ValidationError("Give a query or --queries FILE, not both.") }
            guard !dryRun else { throw ValidationError("--dry-run takes one query, not --queries.") }
        } else {
            guard !queryText.isEmpty else { throw ValidationError("The query is empty: say what to search for, e.g. 'mirror kittens --count 50 --out ./imgs'.") }
            guard !uniqueAcrossQueries else { throw ValidationError("--unique-across-queries needs --queries FILE.") }
            guard sharding.shard == nil, sharding.shards == nil else {
                throw ValidationError("--shard shares the queries of --queries FILE among copies; one query is one copy's work.")
            }
        }
        guard sharding.shardBy == .row else { throw ValidationError("--shard-by is for mirror urls: --queries are shared one query at a time.") }
        guard (1...100_000).contains(count) else { throw ValidationError("--count must be between 1 and 100000.") }
        if let pages, pages < 1 { throw ValidationError("--pages must be at least 1.") }
        guard (0...10).contains(apiRetries) else { throw ValidationError("--api-retries must be between 0 and 10.") }
        guard minWidth >= 0, minHeight >= 0 else { throw ValidationError("--min-width and --min-height cannot be negative.") }
        for name in providerNames where !ProviderRegistry.names.contains(name) {
            throw ValidationError("Unknown provider '\(name)'. Known: \(ProviderRegistry.names.joined(separator: ", ")).")
        }
        if providerNames.isEmpty { throw ValidationError("--provider needs at least one provider name.") }
        if let endpoint {
            guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
                throw ValidationError("--endpoint must be an http(s) URL.")
            }
            guard providerNames.count == 1 else { throw ValidationError("--endpoint needs exactly one --provider.") }
        }
        _ = try formats()
        if let name {
            // A usage error (64) like every other wrong option, not a runtime failure (1).
            do throws(NameTemplate.TemplateError) {
                try NameTemplate.validate(name)
            } catch {
                throw ValidationError(error.message)
            }
        }
    }

    var providerNames: [String] {
        providers.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    private func formats() throws -> Set<ImageFormat>? {
        guard let types else { return nil }
        var formats = Set<ImageFormat>()
        for raw in types.split(separator: ",") {
            let name = raw.trimmingCharacters(in: .whitespaces).lowercased()
            let alias = ["jpg": "jpeg", "tif": "tiff", "heic": "heif"][name] ?? name
            guard let format = ImageFormat(rawValue: alias) else {
                throw ValidationError("Unknown --type '\(name)'. Known: \(ImageFormat.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            formats.insert(format)
        }
        return formats
    }

    func makeConfiguration(query: String? = nil, shard: WorkShard? = nil) throws -> MirrorJob.Configuration {
        if !dryRun, let refusal = folder.splitsRefusal(in: output) {
            printError(refusal)
            throw ExitStatus.usage.exitCode
        }
        let output = folder.destination(output)
        var directory = dryRun ? URL(fileURLWithPath: output) : try outputFolder(output)
        // A folder is one run's (lock, manifest, state database): each copy of a sharded --queries fills its own.
        if let shard { directory.appendPathComponent(shard.directoryName, isDirectory: true) }
        var configuration = MirrorJob.Configuration(query: query ?? queryText, count: count, directory: directory)
        configuration.providers = providerNames
        configuration.endpoint = endpoint.flatMap(URL.init(string:))
        configuration.pageLimit = pages
        configuration.deduplication = dedup
        configuration.layout = folder.folderLayout
        let formats = try formats()
        if minWidth > 0 || minHeight > 0 || formats != nil {
            configuration.filter = ImageFilter(minimumWidth: minWidth, minimumHeight: minHeight, formats: formats)
        }
        configuration.licenses = licenses.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() } } ?? []
        configuration.nameTemplate = name.map(NameTemplate.init)
        network.apply(to: &configuration.downloads)
        configuration.apiRetry.maximumRetries = apiRetries
        configuration.isSyncEnabled = !outputOptions.noFsync
        configuration.consent = consent.policy
        agent.apply(to: &configuration.downloads, consent: &configuration.consent)
        if !cache.noCache {
            let directory = cache.cacheDirectory.map { URL(fileURLWithPath: $0) } ?? DiskCache.defaultDirectory()
            configuration.downloads.cache = ImageCache(configuration: .init { $0.directory = directory })
        }
        return configuration
    }

    func run() async throws {
        if !dryRun { consent.warnIfIgnoring(consent.policy, quiet: outputOptions.quiet) }
        if let queries {
            try await runQueries(queries)
            return
        }
        let job = MirrorJob(configuration: try makeConfiguration())
        if dryRun {
            try await runDry(job)
            return
        }
        let renderer = ProgressRenderer(mode: ProgressRenderer.mode(quiet: outputOptions.quiet), target: count)
        let json = outputOptions.json
        let (summary, interrupted) = try await runInterruptibly(renderer: renderer) {
            do {
                return try await job.run { renderer.show($0) }
            } catch let failure as MirrorJob.Failure {
                // A run that failed after starting still owes --json its summary (each provider's status and why).
                if json, let summary = failure.summary { printJSON(summary) }
                throw failure
            }
        }
        var result = summary
        result.interrupted = result.interrupted || interrupted
        report(result)
        outputOptions.writeGallery(URL(fileURLWithPath: output))
        throw status(of: result).exitCode
    }

    /// `--queries FILE`: each query in turn fills its own subfolder to the count; one manifest, one state database,
    /// one exit status (the worst of them).
    private func runQueries(_ path: String) async throws {
        var list: [(query: String, folder: String)]
        let share: (WorkShard, String)?
        do {
            list = try Self.readQueries(path)
            share = try sharding.resolve()
        } catch {
            printError(String(describing: error))
            throw ExitStatus.usage.exitCode
        }
        if let (shard, origin) = share {
            // Queries are shared one by one (a query's images come from its own search, so there is no host to split by).
            let all = list.count
            list = list.enumerated().filter { shard.owns(item: $0.offset) }.map(\.element)
            if !outputOptions.quiet {
                let note = "mirror: shard \(shard.index)/\(shard.count) (from \(origin)): \(list.count) of \(all) queries into \(output)/\(shard.directoryName)\n"
                FileHandle.standardError.write(Data(note.utf8))
            }
        }
        var summaries: [MirrorJob.Summary] = []
        var worst = ExitStatus.success
        for (query, folder) in list {
            var configuration = try makeConfiguration(query: query, shard: share?.0)
            configuration.label = (query, folder)
            configuration.uniqueAcrossLabels = uniqueAcrossQueries
            let job = MirrorJob(configuration: configuration)
            let renderer = ProgressRenderer(mode: ProgressRenderer.mode(quiet: outputOptions.quiet), target: count)
            do {
                let (summary, interrupted) = try await runInterruptibly(renderer: renderer) {
                    try await job.run { renderer.show($0) }
                }
                var result = summary
                result.interrupted = result.interrupted || interrupted
                summaries.append(result)
                if !outputOptions.quiet {
                    var line = "\(folder)/: \(result.total)/\(result.target) (\(result.tally.saved) saved"
                    if result.crossLabelDuplicates > 0 { line += ", \(result.crossLabelDuplicates) also in another query's folder" }
                    line += ")"
                    if result.exhausted { line += "; the sources ran dry" }
                    FileHandle.standardError.write(Data((line + "\n").utf8))
                }
                worst = Self.worse(worst, status(of: result))
                if result.interrupted { break }
            } catch let exit as ExitCode {
                // The job printed its one line; a configuration error (a key, the folder) ends them all.
                let status = ExitStatus(rawValue: exit.rawValue) ?? .failure
                worst = Self.worse(worst, status)
                if status != .unavailable { break }
            }
        }
        if outputOptions.json {
            /// Each query's summary, and the sums; `schema` is the counts' (``Tally/schemaVersion``), as in each summary.
            struct Total: Encodable {
                var schema = Tally.schemaVersion
                var queries: [MirrorJob.Summary]
                var saved: Int
                var total: Int
                var crossLabelDuplicates: Int
            }
            let total = Total(
                queries: summaries, saved: summaries.map(\.tally.saved).reduce(0, +), total: summaries.map(\.total).reduce(0, +),
                crossLabelDuplicates: summaries.map(\.crossLabelDuplicates).reduce(0, +)
            )
            printJSON(total)
        }
        outputOptions.writeGallery(URL(fileURLWithPath: output))
        throw worst.exitCode
    }

    /// The queries of a file (one a line; blank lines and `#` comments skipped; repeats dropped) with their folders.
    static func readQueries(_ path: String) throws -> [(query: String, folder: String)] {
        let text: String
        do {
            text = path == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ValidationError("cannot read the queries file \(path): \((error as NSError).localizedDescription)")
        }
        var list: [(query: String, folder: String)] = []
        var folders: [String: String] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let query = line.trimmingCharacters(in: .whitespaces)
            guard !query.isEmpty, !query.hasPrefix("#"), !list.contains(where: { $0.query == query }) else { continue }
            let folder = FileNaming.sanitize(query, fallback: "query")
            if let other = folders[folder.lowercased()] {
                throw ValidationError("the queries \"\(other)\" and \"\(query)\" would share the folder \(folder); reword one")
            }
            folders[folder.lowercased()] = query
            list.append((query, folder))
        }
        guard !list.isEmpty else { throw ValidationError("the queries file \(path) holds no query (one a line)") }
        return list
    }

    private static func worse(_ a: ExitStatus, _ b: ExitStatus) -> ExitStatus {
        let order: [ExitStatus] = [.success, .exhausted, .unavailable, .failure, .configuration, .locked, .usage, .interrupted]
        return (order.firstIndex(of: a) ?? 0) >= (order.firstIndex(of: b) ?? 0) ? a : b
    }

    private func runDry(_ job: MirrorJob) async throws {
        let (results, interrupted) = try await runInterruptibly(renderer: ProgressRenderer(mode: .quiet, target: nil)) {
            try await job.candidates()
        }
        for result in results { print(result.imageURL.absoluteString) }
        if interrupted { throw ExitStatus.interrupted.exitCode }
    }

    private func report(_ summary: MirrorJob.Summary) {
        if outputOptions.json { printJSON(summary) }
        guard !outputOptions.quiet else { return }
        let line: String
        if summary.upToDate {
            line = "up to date: \(summary.total) images in \(output) (asked for \(summary.target)); nothing to fetch"
        } else {
            var phrases = TallyReport.runPhrases(summary.tally, purpose: summary.purpose)
            phrases.insert("\(TallyReport.number(summary.total))/\(TallyReport.number(summary.target)) in \(output)", at: 1)
            var text = (phrases + ["\(TallyReport.number(summary.pages)) pages"]).joined(separator: ", ")
            text += String(format: " in %.1fs", summary.seconds)
            let failed = summary.providerStatus.filter { $0.status == .failed }
            if !failed.isEmpty {
                text += "; " + failed.map { $0.phrase.cut(to: MessageLimit.line / 4) }.joined(separator: "; ")
            }
            if summary.interrupted {
                text += "; interrupted: run the same command again to continue"
            } else if summary.exhausted {
                text += "; the sources ran dry before \(summary.target): everything they had was saved"
            }
            line = text
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    private func status(of summary: MirrorJob.Summary) -> ExitStatus {
        if summary.interrupted { return .interrupted }
        if summary.total >= summary.target { return .success }
        return .exhausted
    }
}
