/// A JUMBF box tree (ISO/IEC 19566-5), read whole and checked before anything in it is believed.
///
/// Every box is `LBox` (4 bytes, big-endian, the box's whole length), `TBox` (its type), then `XLBox` (8 bytes) when
/// `LBox` is 1; an `LBox` of 0 runs to the end of the store, and is accepted only at the top (ISO/IEC 14496-12 lets
/// only the last box of a file have it; inside a superbox it would swallow its siblings as children). Superboxes (`jumb`) hold a description box
/// (`jumd`: a 16-byte type UUID, a toggles byte, then a NUL-terminated label when toggle `0x02` is set, a 4-byte id
/// with `0x04`, a 32-byte signature with `0x08`, a private box with `0x10`) followed by their content boxes. Only
/// the label is read from a description; only `jumb` boxes are descended into.
///
/// Bounds, each refusing the whole tree when passed:
/// - ``maxDepth`` (16): a C2PA store nests four superboxes deep (store, manifest, assertion store, assertion); an
///   ingredient's manifests sit beside the active one, not inside it.
/// - ``maxBoxes`` (10,000): a store with a hundred assertions in each of a few dozen manifests has a few thousand
///   boxes; the bound keeps a store of 8-byte boxes from costing a node per 8 bytes.
/// - a label over ``maxLabelLength`` bytes (C2PA's labels are under 100), or not UTF-8.
/// Every length is compared with what is left of its parent, never added to an offset first.
struct JUMBFTree {
    static let maxDepth = 16
    static let maxBoxes = 10_000
    static let maxLabelLength = 1_024

    static let superbox = fourCC("jumb")
    static let description = fourCC("jumd")

    /// One box: its type, where it starts, the range of its content (after the header) within the tree's buffer,
    /// and, for a superbox, its description's label and the indices of its content boxes.
    struct Node {
        var type: UInt32
        var start: Int
        var content: Range<Int>
        var label: String?
        var children: [Int] = []
    }

    /// Why a tree was refused.
    enum Failure: Error, CustomStringConvertible {
        case boxHeaderCutOff(at: Int)
        case badLength(UInt64, at: Int)
        case overrunsParent(length: UInt64, remaining: Int, at: Int)
        case tooDeep
        case tooManyBoxes
        case noDescription(at: Int)
        case badDescription(at: Int)
        case empty

        var description: String {
            switch self {
            case .boxHeaderCutOff(let offset): "a box header at byte \(offset) is cut off"
            case .badLength(let length, let offset): "a box at byte \(offset) has length \(length)"
            case .overrunsParent(let length, let remaining, let offset):
                "a box at byte \(offset) claims \(length) bytes with \(remaining) left"
            case .tooDeep: "boxes nest deeper than \(JUMBFTree.maxDepth)"
            case .tooManyBoxes: "more than \(JUMBFTree.maxBoxes) boxes"
            case .noDescription(let offset): "the superbox at byte \(offset) has no description box"
            case .badDescription(let offset): "the description box at byte \(offset) is malformed"
            case .empty: "no box"
            }
        }
    }

    /// Every box, parents before their children; the top-level boxes are ``roots``.
    private(set) var nodes: [Node] = []
    private(set) var roots: [Int] = []

    /// Reads every box of `bytes`.
    init(_ bytes: ByteView) throws(Failure) {
        roots = try readBoxes(bytes, in: 0..<bytes.count, depth: 0)
        guard !roots.isEmpty else { throw .empty }
    }

    /// The superboxes among `node`'s children, in order.
    func superboxes(in node: Int) -> [Int] {
        guard nodes.indices.contains(node) else { return [] }
        return nodes[node].children.filter { nodes.indices.contains($0) && nodes[$0].type == Self.superbox }
    }

    /// The first child of `node` of type `type`.
    func firstChild(of node: Int, type: UInt32) -> Int? {
        guard nodes.indices.contains(node) else { return nil }
        return nodes[node].children.first { nodes.indices.contains($0) && nodes[$0].type == type }
    }

    /// The label of `node`, when it is a superbox whose description has one.
    func label(_ node: Int) -> String? {
        nodes.indices.contains(node) ? nodes[node].label : nil
    }

    func content(_ node: Int) -> Range<Int>? {
        nodes.indices.contains(node) ? nodes[node].content : nil
    }

    // MARK: - Reading

    /// Reads the boxes filling `range`, returning their node indices.
    private mutating func readBoxes(_ bytes: ByteView, in range: Range<Int>, depth: Int) throws(Failure) -> [Int] {
        guard depth < Self.maxDepth else { throw .tooDeep }
        var indices: [Int] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            let left = range.upperBound - offset
            guard left >= 8, let length32 = bytes.u32be(offset), let type = bytes.u32be(offset + 4) else {
                throw .boxHeaderCutOff(at: offset)
            }
            var header = 8
            var length: Int
            switch length32 {
            case 0:
                guard depth == 0 else { throw .badLength(0, at: offset) }
                length = left  // to the end of the store
            case 1:
                guard left >= 16, let extended = bytes.u64be(offset + 8) else { throw .boxHeaderCutOff(at: offset) }
                guard extended >= 16 else { throw .badLength(extended, at: offset) }
                guard extended <= UInt64(left) else { throw .overrunsParent(length: extended, remaining: left, at: offset) }
                header = 16
                length = Int(extended)
            default:
                guard length32 >= 8 else { throw .badLength(UInt64(length32), at: offset) }
                guard UInt64(length32) <= UInt64(left) else {
                    throw .overrunsParent(length: UInt64(length32), remaining: left, at: offset)
                }
                length = Int(length32)
            }
            guard nodes.count < Self.maxBoxes else { throw .tooManyBoxes }
            let index = nodes.count
            nodes.append(Node(type: type, start: offset, content: offset + header..<offset + length))
            indices.append(index)
            if type == Self.superbox {
                let children = try readBoxes(bytes, in: offset + header..<offset + length, depth: depth + 1)
                guard let first = children.first, nodes[first].type == Self.description else {
                    throw .noDescription(at: offset)
                }
                nodes[index].label = try Self.label(bytes, description: nodes[first])
                nodes[index].children = children
            }
            offset += length
        }
        return indices
    }

    /// The label of a description box's content, or nil when its toggles say it has none.
    private static func label(_ bytes: ByteView, description: Node) throws(Failure) -> String? {
        let content = description.content
        // 16-byte type UUID, then the toggles.
        guard content.count >= 17, let toggles = bytes.u8(content.lowerBound + 16) else {
            throw .badDescription(at: description.start)
        }
        guard toggles & 0x02 != 0 else { return nil }
        let start = content.lowerBound + 17
        guard let nul = bytes.firstIndex(of: 0, from: start), nul < content.upperBound,
              nul - start <= maxLabelLength
        else {
            throw .badDescription(at: description.start)
        }
        let utf8 = UnsafeRawBufferPointer(rebasing: bytes.buffer[start..<nul])
        guard let label = String(validating: utf8, as: UTF8.self) else { throw .badDescription(at: description.start) }
        return label
    }
}
