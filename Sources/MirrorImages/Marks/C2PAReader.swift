/// Reads a C2PA manifest store's active manifest: its training-and-data-mining entries and its `c2pa.created`
/// actions' digital source types.
///
/// The store is a JUMBF superbox labelled `c2pa`; its manifests are its child superboxes, the last the active one
/// (C2PA 2.1, "Manifest Store"); inside it the assertion store is the superbox labelled `c2pa.assertions`, and each
/// assertion a superbox labelled by name, a repeated one with a `__N` suffix, whose content is a `cbor` box. The
/// whole tree is read and checked first (``JUMBFTree``); an assertion whose CBOR is refused adds a note and nothing
/// else. Signatures, hashes and the claim are not validated: the values are what the signer wrote.
enum C2PAReader {
    /// The largest store read, in any container: C2PA stores are tens of kilobytes (a thumbnail, a claim, a
    /// signature), megabytes only with many ingredients' manifests; 16 MiB bounds the one copy a store split over
    /// APP11 segments or GIF sub-blocks needs.
    static let maxStoreLength = 16 << 20
    static let cbor = fourCC("cbor")

    /// Assertion labels whose entries are read, without any `__N` suffix.
    static let trainingMiningLabels: Set<String> = ["c2pa.training-mining", "cawg.training-mining"]
    /// Assertion labels whose `c2pa.created` actions are read.
    static let actionsLabels: Set<String> = ["c2pa.actions", "c2pa.actions.v2"]

    /// Reads the store filling `bytes` into `collector`; notes name `container`. A JUMBF tree whose top box is not
    /// labelled `c2pa` (JPEG XT, 360 metadata) is left alone when `otherJUMBFIsExpected`, otherwise noted.
    static func read(
        _ bytes: ByteView, container: String, otherJUMBFIsExpected: Bool, into collector: inout MarkCollector
    ) {
        let tree: JUMBFTree
        do {
            tree = try JUMBFTree(bytes)
        } catch {
            collector.sawMarks = true
            collector.note("JUMBF in \(container) is malformed: \(error); not read")
            return
        }
        guard let store = tree.roots.first(where: { tree.label($0) == "c2pa" }) else {
            if !otherJUMBFIsExpected {
                collector.sawMarks = true
                collector.note("JUMBF in \(container) is not a C2PA manifest store; not read")
            }
            return
        }
        collector.sawMarks = true
        collector.marks.hasC2PAManifest = true
        guard let manifest = tree.superboxes(in: store).last else {
            collector.note("C2PA manifest store in \(container) has no manifest")
            return
        }
        guard let assertions = tree.superboxes(in: manifest).first(where: { tree.label($0) == "c2pa.assertions" }) else {
            collector.note("C2PA active manifest in \(container) has no assertion store")
            return
        }
        for assertion in tree.superboxes(in: assertions) {
            guard let label = tree.label(assertion) else { continue }
            let name = baseLabel(label)
            let isTrainingMining = trainingMiningLabels.contains(name)
            guard isTrainingMining || actionsLabels.contains(name) else { continue }
            guard let box = tree.firstChild(of: assertion, type: cbor), let range = tree.content(box) else {
                collector.note("C2PA \(label) in \(container) has no CBOR content; not read")
                continue
            }
            let value: CBORValue
            do {
                value = try CBORDecoder.decode(UnsafeRawBufferPointer(rebasing: bytes.buffer[range]))
            } catch {
                collector.note("C2PA \(label) in \(container): \(error); not read")
                continue
            }
            if isTrainingMining {
                readTrainingMining(value, label: label, container: container, into: &collector)
            } else {
                readActions(value, label: label, container: container, into: &collector)
            }
        }
    }

    /// A label without its `__N` suffix (C2PA 2.1, "Multiple Instances"): `c2pa.actions__2` → `c2pa.actions`.
    static func baseLabel(_ label: String) -> String {
        let utf8 = label.utf8
        guard let lastNonDigit = utf8.lastIndex(where: { !(0x30...0x39).contains($0) }),
              lastNonDigit != utf8.index(before: utf8.endIndex), lastNonDigit > utf8.startIndex,
              utf8[lastNonDigit] == UInt8(ascii: "_"), utf8[utf8.index(before: lastNonDigit)] == UInt8(ascii: "_")
        else { return label }
        return String(label[..<utf8.index(before: lastNonDigit)])
    }

    /// `{ "entries": { name: { "use": …, "constraint_info": … }, … } }`.
    private static func readTrainingMining(
        _ value: CBORValue, label: String, container: String, into collector: inout MarkCollector
    ) {
        guard let entries = value["entries"]?.entries else {
            collector.note("C2PA \(label) in \(container) has no entries map; not read")
            return
        }
        var unreadable = 0
        for entry in entries {
            guard let name = entry.key.text, let use = entry.value["use"]?.text else {
                unreadable += 1
                continue
            }
            collector.addTrainingMining(ImageMarks.TrainingMiningEntry(
                label: label, entry: name, use: use, constraintInfo: entry.value["constraint_info"]?.text))
        }
        if unreadable > 0 {
            collector.note("C2PA \(label) in \(container) has \(unreadable) entries without a text use; not read")
        }
    }

    /// `{ "actions": [ { "action": "c2pa.created", "digitalSourceType": … }, … ] }`.
    private static func readActions(
        _ value: CBORValue, label: String, container: String, into collector: inout MarkCollector
    ) {
        guard let actions = value["actions"]?.items else {
            collector.note("C2PA \(label) in \(container) has no actions array; not read")
            return
        }
        for action in actions where action["action"]?.text == "c2pa.created" {
            guard let type = action["digitalSourceType"]?.text else { continue }
            collector.addSourceType(ImageMarks.SourceType(
                value: type.trimmingXMLWhitespace, source: .c2pa,
                location: "C2PA \(label) c2pa.created"))
        }
    }
}
