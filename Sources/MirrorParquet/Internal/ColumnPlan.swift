/// How one top-level column is read: the leaf column (chunk) it comes from, what its leaf values convert to, and the
/// slots of its value tree, which turn repetition and definition levels back into lists and nulls.
///
/// A slot is a place a value occupies: slot 0 the row's value, slot k+1 an element of the list at slot k, the last
/// slot the leaf. A slot's value is present when the definition level reaches `definedLevel` (else it is `null`); a
/// list slot has elements when the level reaches `list.definedLevel` (else it is empty), and a level entry whose
/// repetition level is `list.repetitionLevel` starts its next element. Only columns with one leaf are planned: a scalar,
/// a LIST (3-level, or 2-level as older writers made them, nested to any depth) or a bare repeated field.
struct ColumnPlan: Sendable {
    struct Slot: Sendable {
        var definedLevel: Int
        var list: (definedLevel: Int, repetitionLevel: Int)?
    }

    var name: String
    var leafIndex: Int
    var slots: [Slot]
    var leaf: LeafType
    var maxDefinitionLevel: Int
    var maxRepetitionLevel: Int
}

/// The leaf's physical type and what its values read as.
struct LeafType: Sendable {
    enum Conversion: Sendable {
        case boolean, signed, unsigned, float, double, string, bytes, int96, date, uuid, float16
        case timestamp(ParquetType.TimeUnit)
        case time(ParquetType.TimeUnit)
        case decimal(scale: Int)
    }

    var physical: PhysicalType
    /// FIXED_LEN_BYTE_ARRAY's width in bytes, 1 or more; 0 for the other types.
    var width: Int
    var conversion: Conversion
    var type: ParquetType
}

/// The schema's tree, built from its flat depth-first list, and the plan of every top-level column.
struct SchemaTree: Sendable {
    /// Schemas nested deeper than this are refused (Parquet puts no bound; a list of lists of lists is 7 deep). It bounds
    /// the recursion here and in the value tree, and keeps levels well inside a byte.
    static let maximumDepth = 64
    /// Elements past this are refused: wide tables have thousands of columns, not millions.
    static let maximumElements = 1 << 20

    struct Node: Sendable {
        var element: SchemaElement
        var children: [Node]
        /// The index of its first leaf in depth-first order, the order of a row group's column chunks.
        var firstLeaf: Int
    }

    var columns: [ParquetColumn]
    /// Per top-level column, its plan or why it cannot be read.
    var plans: [Result<ColumnPlan, ParquetError>]
    /// The path of every leaf, in column chunk order.
    var leafPaths: [[String]]
    var leafTypes: [PhysicalType]

    init(_ elements: [SchemaElement]) throws(ParquetError) {
        guard !elements.isEmpty else { throw .corrupt("the schema is empty") }
        guard elements.count <= Self.maximumElements else {
            throw .overLimit("the schema has \(elements.count) elements, more than \(Self.maximumElements)")
        }
        var index = 0
        var leaves: [(path: [String], type: PhysicalType)] = []
        let root = try Self.node(elements, &index, depth: 0, path: [], leaves: &leaves)
        guard index == elements.count else {
            throw .corrupt("the schema has \(elements.count - index) elements after its root's tree")
        }
        guard !root.children.isEmpty else { throw .corrupt("the schema's root has no columns") }
        leafPaths = leaves.map(\.path)
        leafTypes = leaves.map(\.type)
        var columns: [ParquetColumn] = []
        var plans: [Result<ColumnPlan, ParquetError>] = []
        for child in root.children {
            let name = child.element.name
            let planner = Planner(topName: name)
            do throws(ParquetError) {
                let (type, nullable, plan) = try planner.plan(child)
                columns.append(ParquetColumn(name: name, type: type, isNullable: nullable))
                plans.append(.success(plan))
            } catch {
                // A column that cannot be read fails when it is asked for, not the whole file.
                let nullable = child.element.repetition != .required
                if case .unsupported(let reason) = error {
                    columns.append(ParquetColumn(name: name, type: .unsupported(reason), isNullable: nullable))
                    plans.append(.failure(.unsupported("column \(quoted(name)) is a \(reason), which this reader does not read")))
                } else {
                    columns.append(ParquetColumn(name: name, type: .unsupported("invalid column"), isNullable: nullable))
                    plans.append(.failure(error.within("column \(quoted(name))")))
                }
            }
        }
        self.columns = columns
        self.plans = plans
    }

    private static func node(
        _ elements: [SchemaElement], _ index: inout Int, depth: Int, path: [String],
        leaves: inout [(path: [String], type: PhysicalType)]
    ) throws(ParquetError) -> Node {
        guard depth <= maximumDepth else { throw .overLimit("the schema is nested more than \(maximumDepth) deep") }
        guard index < elements.count else { throw .corrupt("the schema ends inside a group") }
        let element = elements[index]
        index += 1
        let path = depth == 0 ? [] : path + [element.name]
        let childCount = Int(element.numChildren ?? 0)
        if childCount <= 0 {
            guard depth > 0 else { throw .corrupt("the schema's root has no columns") }
            guard let type = element.type else {
                throw .corrupt("schema element \(quoted(element.name)) has neither a type nor children")
            }
            leaves.append((path, type))
            return Node(element: element, children: [], firstLeaf: leaves.count - 1)
        }
        guard childCount <= elements.count - index else {
            throw .corrupt("schema element \(quoted(element.name)) has \(childCount) children, more than the \(elements.count - index) elements after it")
        }
        let firstLeaf = leaves.count
        var children: [Node] = []
        children.reserveCapacity(childCount)
        for _ in 0..<childCount {
            children.append(try node(elements, &index, depth: depth + 1, path: path, leaves: &leaves))
        }
        return Node(element: element, children: children, firstLeaf: firstLeaf)
    }
}

// MARK: - Planning

/// Follows one top-level field down to its leaf, reading LIST groups by the format's backward-compatibility rules
/// (LogicalTypes.md): the repeated field of a LIST is the element when it is a primitive, a group of several fields, a
/// group whose one field is repeated, or a group named `array` or `<list>_tuple`; otherwise its one field is.
private struct Planner {
    let topName: String

    /// Lists nested deeper than this are refused (the schema's depth bounds them already; this bounds what a row's JSON
    /// can nest).
    static let maximumListDepth = 32

    func plan(_ top: SchemaTree.Node) throws(ParquetError) -> (ParquetType, Bool, ColumnPlan) {
        var slots: [ColumnPlan.Slot] = []
        let (type, nullable, leaf) = try value(top, definition: 0, repetition: 0, repetitionTaken: false, slots: &slots)
        let maxDefinition = slots.last?.definedLevel ?? 0
        let maxRepetition = slots.compactMap(\.list?.repetitionLevel).max() ?? 0
        let plan = ColumnPlan(name: topName, leafIndex: top.firstLeaf, slots: slots, leaf: leaf,
                              maxDefinitionLevel: maxDefinition, maxRepetitionLevel: maxRepetition)
        return (type, nullable, plan)
    }

    /// The slots of `node`'s value, appended; returns its type, whether it is nullable, and the leaf.
    /// `repetitionTaken`: the node is the repeated field of an enclosing list, whose repetition made that list's levels.
    private func value(
        _ node: SchemaTree.Node, definition: Int, repetition: Int, repetitionTaken: Bool,
        slots: inout [ColumnPlan.Slot]
    ) throws(ParquetError) -> (ParquetType, Bool, LeafType) {
        let element = node.element
        var definition = definition
        var nullable = false
        if !repetitionTaken {
            switch element.repetition ?? .required {
            case .required: break
            case .optional:
                definition += 1
                nullable = true
            case .repeated:
                // A repeated field outside a LIST: a list (never null) of its values (never null).
                let list = try listSlot(definedLevel: definition, repetition: repetition, slots: &slots)
                let (type, _, leaf) = try value(node, definition: list.definedLevel, repetition: list.repetitionLevel,
                                                repetitionTaken: true, slots: &slots)
                return (.list(type, elementIsNullable: false), false, leaf)
            }
        }
        if node.children.isEmpty {
            slots.append(ColumnPlan.Slot(definedLevel: definition, list: nil))
            let leaf = try leafType(element)
            return (leaf.type, nullable, leaf)
        }
        let isList = element.logicalType == .list || element.convertedType == ConvertedType.list
        let isMap = element.logicalType == .map || element.convertedType == ConvertedType.map
            || element.convertedType == ConvertedType.mapKeyValue
        if isMap { throw .unsupported("map") }
        guard isList else { throw .unsupported(node.children.count == 1 ? "struct of one field" : "struct") }
        guard node.children.count == 1, let repeated = node.children.first, repeated.element.repetition == .repeated else {
            throw .corrupt("LIST group \(quoted(element.name)) does not hold exactly one repeated field")
        }
        let list = try listSlot(definedLevel: definition, repetition: repetition, slots: &slots)
        let (elementNode, taken): (SchemaTree.Node, Bool)
        if repeated.children.isEmpty {
            (elementNode, taken) = (repeated, true)
        } else if repeated.children.count > 1 {
            throw .unsupported("list of structs")
        } else if repeated.children.first?.element.repetition == .repeated || repeated.element.name == "array"
            || repeated.element.name == element.name + "_tuple" {
            (elementNode, taken) = (repeated, true)
        } else if let only = repeated.children.first {
            (elementNode, taken) = (only, false)
        } else {
            throw .corrupt("LIST group \(quoted(element.name)) has no element")
        }
        let (type, elementNullable, leaf) = try value(elementNode, definition: list.definedLevel,
                                                      repetition: list.repetitionLevel, repetitionTaken: taken,
                                                      slots: &slots)
        return (.list(type, elementIsNullable: elementNullable), nullable, leaf)
    }

    private func listSlot(
        definedLevel: Int, repetition: Int, slots: inout [ColumnPlan.Slot]
    ) throws(ParquetError) -> (definedLevel: Int, repetitionLevel: Int) {
        guard repetition < Self.maximumListDepth else {
            throw .overLimit("lists nested more than \(Self.maximumListDepth) deep")
        }
        let list = (definedLevel: definedLevel + 1, repetitionLevel: repetition + 1)
        slots.append(ColumnPlan.Slot(definedLevel: definedLevel, list: list))
        return list
    }

    /// The leaf's conversion from its physical type and annotations: the logical type first, else the converted type,
    /// else the physical type alone.
    func leafType(_ element: SchemaElement) throws(ParquetError) -> LeafType {
        guard let physical = element.type else { throw .corrupt("leaf \(quoted(element.name)) has no type") }
        var width = 0
        if physical == .fixedLenByteArray {
            guard let length = element.typeLength, length >= 1, length <= 1 << 24 else {
                throw .corrupt("FIXED_LEN_BYTE_ARRAY \(quoted(element.name)) has width \(element.typeLength.map(String.init) ?? "none")")
            }
            width = Int(length)
        }
        func mismatch(_ annotation: String) -> ParquetError {
            .corrupt("leaf \(quoted(element.name)) is annotated \(annotation) on physical type \(physical.name)")
        }
        func make(_ conversion: LeafType.Conversion, _ type: ParquetType) -> LeafType {
            LeafType(physical: physical, width: width, conversion: conversion, type: type)
        }
        let isBytes = physical == .byteArray || physical == .fixedLenByteArray
        func decimal(scale: Int32, precision: Int32) throws(ParquetError) -> LeafType {
            guard [.int32, .int64, .byteArray, .fixedLenByteArray].contains(physical) else { throw mismatch("DECIMAL") }
            guard scale >= 0, precision >= 1, scale <= precision, precision <= 1000 else {
                throw .corrupt("DECIMAL \(quoted(element.name)) has precision \(precision) and scale \(scale)")
            }
            return make(.decimal(scale: Int(scale)), .decimal(precision: Int(precision), scale: Int(scale)))
        }
        switch element.logicalType {
        case .string?, .enumeration?:
            guard isBytes else { throw mismatch("STRING") }
            return make(.string, .string)
        case .json?:
            guard isBytes else { throw mismatch("JSON") }
            return make(.string, .json)
        case .bson?:
            guard isBytes else { throw mismatch("BSON") }
            return make(.bytes, .bytes)
        case .uuid?:
            guard physical == .fixedLenByteArray, width == 16 else { throw mismatch("UUID") }
            return make(.uuid, .uuid)
        case .float16?:
            guard physical == .fixedLenByteArray, width == 2 else { throw mismatch("FLOAT16") }
            return make(.float16, .float16)
        case .decimal(let scale, let precision)?:
            return try decimal(scale: scale, precision: precision)
        case .date?:
            guard physical == .int32 else { throw mismatch("DATE") }
            return make(.date, .date)
        case .time(let unit, _)?:
            guard physical == (unit == .milliseconds ? .int32 : .int64) else { throw mismatch("TIME") }
            return make(.time(unit), .time(unit))
        case .timestamp(let unit, let utc)?:
            guard physical == .int64 else { throw mismatch("TIMESTAMP") }
            return make(.timestamp(unit), .timestamp(unit, isAdjustedToUTC: utc))
        case .integer(let bits, let signed)?:
            guard [8, 16, 32, 64].contains(bits), physical == (bits == 64 ? .int64 : .int32) else {
                throw mismatch("INTEGER(\(bits))")
            }
            return make(signed ? .signed : .unsigned, .integer(bitWidth: Int(bits), isSigned: signed))
        case .unknown?, .list?, .map?, .other?, nil:
            break
        }
        switch element.convertedType {
        case ConvertedType.utf8?, ConvertedType.enumeration?:
            guard isBytes else { throw mismatch("UTF8") }
            return make(.string, .string)
        case ConvertedType.json?:
            guard isBytes else { throw mismatch("JSON") }
            return make(.string, .json)
        case ConvertedType.decimal?:
            return try decimal(scale: element.scale ?? 0, precision: element.precision ?? 0)
        case ConvertedType.date?:
            guard physical == .int32 else { throw mismatch("DATE") }
            return make(.date, .date)
        case ConvertedType.timeMillis?:
            guard physical == .int32 else { throw mismatch("TIME_MILLIS") }
            return make(.time(.milliseconds), .time(.milliseconds))
        case ConvertedType.timeMicros?:
            guard physical == .int64 else { throw mismatch("TIME_MICROS") }
            return make(.time(.microseconds), .time(.microseconds))
        case ConvertedType.timestampMillis?, ConvertedType.timestampMicros?:
            guard physical == .int64 else { throw mismatch("TIMESTAMP") }
            let unit: ParquetType.TimeUnit = element.convertedType == ConvertedType.timestampMillis ? .milliseconds : .microseconds
            return make(.timestamp(unit), .timestamp(unit, isAdjustedToUTC: true))
        case let converted? where (ConvertedType.uint8...ConvertedType.int64).contains(converted):
            let signed = converted >= ConvertedType.int8
            let bits = [8, 16, 32, 64][Int((converted - ConvertedType.uint8) % 4)]
            guard physical == (bits == 64 ? .int64 : .int32) else { throw mismatch("INT_\(bits)/UINT_\(bits)") }
            return make(signed ? .signed : .unsigned, .integer(bitWidth: bits, isSigned: signed))
        default:
            break
        }
        switch physical {
        case .boolean: return make(.boolean, .boolean)
        case .int32: return make(.signed, .integer(bitWidth: 32, isSigned: true))
        case .int64: return make(.signed, .integer(bitWidth: 64, isSigned: true))
        case .int96: return make(.int96, .timestamp(.nanoseconds, isAdjustedToUTC: true))
        case .float: return make(.float, .float)
        case .double: return make(.double, .double)
        case .byteArray: return make(.bytes, .bytes)
        case .fixedLenByteArray: return make(.bytes, .fixedBytes(length: width))
        }
    }
}
