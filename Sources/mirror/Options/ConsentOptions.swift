import ArgumentParser
import Foundation
import MirrorKit

/// Options shared by every command that downloads: what the images are for, and which owners' reservations are set
/// aside (README, "What the owner reserved").
struct ConsentOptions: ParsableArguments {
    @OptionGroup var reservations: ReservationOptions

    @Flag(help: "Keep out images that declare a machine made them (IPTC digital source type in their XMP or C2PA manifest), counted as filtered.")
    var skipGenerated = false

    /// The policy the options describe.
    var policy: ConsentPolicy {
        var policy = reservations.policy
        policy.skipsGenerated = skipGenerated
        return policy
    }

    /// Says once, on standard error, which reservations the run sets aside.
    func warnIfIgnoring(_ policy: ConsentPolicy, quiet: Bool) {
        guard !policy.ignored.isEmpty, !quiet else { return }
        let names = policy.ignored.sorted().map(\.rawValue).joined(separator: ",")
        let line = "mirror: warning: --ignore-opt-out \(names): reservations by these signals keep nothing out; they are read and listed in each image's record (opt_outs_ignored)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

/// What the images are for and which reservations count: what every command that decides on them takes, `mirror why`
/// included.
struct ReservationOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "What the images are for.",
        discussion: "Every reservation read (robots.txt's Content-Signal and Content-Usage, X-Robots-Tag, Content-Usage, TDMRep, IPTC Data Mining, C2PA training-mining) is matched against it: a search index is not refused by a reservation of AI training alone."
    ))
    var purpose: UsePurpose = .aiTrain

    @Option(name: .customLong("ignore-opt-out"), help: ArgumentHelp(
        "Signals whose reservations are read and recorded but keep nothing out, comma-separated, or all: for a collection you hold a licence for.",
        discussion: "Signals: robots, content-signal, content-usage, x-robots-tag, tdmrep-file, tdmrep-header, iptc, c2pa. Each saved image's record lists the reservations set aside for it (opt_outs_ignored).",
        valueName: "signal,..."
    ))
    var ignoreOptOut: String?

    @Option(help: "X-Robots-Tag directives that keep an image out whatever the purpose, comma-separated (default: noai, noimageai, noml, noindex, noimageindex for AI uses, noindex and noimageindex also for search, noarchive for archive).")
    var optOutTokens: String?

    func validate() throws {
        guard let ignoreOptOut else { return }
        do {
            _ = try ConsentSignal.list(parsing: ignoreOptOut)
        } catch {
            throw ValidationError("--ignore-opt-out: \(error)")
        }
    }

    /// The policy the options describe.
    var policy: ConsentPolicy {
        var policy = ConsentPolicy(purpose: purpose, ignored: (try? ConsentSignal.list(parsing: ignoreOptOut ?? "")) ?? [])
        if let tokens = optOutTokens {
            policy.setRobotsTagDirectives(Set(tokens.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }))
        }
        return policy
    }
}

extension UsePurpose: ExpressibleByArgument {}
