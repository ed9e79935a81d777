/// Turns one column chunk's level entries back into row values, page after page (a row may span pages).
///
/// Record assembly for a column of one leaf, following the plan's slots (see `ColumnPlan`): an entry whose definition
/// level is below a slot's makes that slot null (or its list empty); an entry whose repetition level is a list's
/// starts that list's next element; a repetition level of 0 starts a row. Entries that contradict the plan (a row that
/// does not start at level 0, a continuation deeper than the list it continues, an element entry of an empty list)
/// are `ParquetError.corrupt`: the reader never guesses a row.
struct ColumnRowReader {
    private var chunk: ColumnChunkReader
    private let plan: ColumnPlan
    private var page: DecodedPage?
    private var entry = 0
    private var valueIndex = 0
    /// The most entries one row may take (`maxValuesPerPage`): a hostile chunk of many tiny pages could otherwise make
    /// one row a list of billions.
    private let maximumEntriesPerRow: Int
    private var rowStart = 0
    private var entriesBeforePage = 0

    init(chunk: ColumnChunkReader, plan: ColumnPlan, maximumEntriesPerRow: Int) {
        self.chunk = chunk
        self.plan = plan
        self.maximumEntriesPerRow = maximumEntriesPerRow
    }

    /// The repetition and definition levels of the next entry, loading pages as needed; nil at the chunk's end.
    private mutating func peek() throws(ParquetError) -> (repetition: Int, definition: Int)? {
        while true {
            if let page, entry < page.count {
                let repetition = entry < page.repetition.count ? Int(page.repetition[entry]) : 0
                let definition = entry < page.definition.count ? Int(page.definition[entry]) : plan.maxDefinitionLevel
                return (repetition, definition)
            }
            guard let next = try chunk.nextPage() else {
                page = nil
                return nil
            }
            entriesBeforePage += page?.count ?? 0
            page = next
            entry = 0
            valueIndex = 0
        }
    }

    /// Whether entries are left after the rows read.
    mutating func hasMoreEntries() throws(ParquetError) -> Bool {
        try peek() != nil
    }

    /// The next row's value, or nil when the chunk has no entries left.
    mutating func nextRow() throws(ParquetError) -> ParquetValue? {
        guard let first = try peek() else { return nil }
        guard first.repetition == 0 else {
            throw .corrupt("a row starts with repetition level \(first.repetition), not 0")
        }
        rowStart = entriesBeforePage + entry
        return try readSlot(0)
    }

    private mutating func readSlot(_ index: Int) throws(ParquetError) -> ParquetValue {
        guard index < plan.slots.count, let current = try peek() else {
            throw .corrupt("the levels end inside a row")
        }
        guard entriesBeforePage + entry - rowStart < maximumEntriesPerRow else {
            throw .overLimit("a row of more than \(maximumEntriesPerRow) values (maxValuesPerPage)")
        }
        let slot = plan.slots[index]
        if current.definition < slot.definedLevel {
            entry += 1
            return .null
        }
        guard let list = slot.list else {
            guard current.definition == plan.maxDefinitionLevel, let page else {
                throw .corrupt("definition level \(current.definition) at a leaf whose level is \(plan.maxDefinitionLevel)")
            }
            entry += 1
            valueIndex += 1
            return try page.values.value(at: valueIndex - 1, leaf: plan.leaf)
        }
        if current.definition < list.definedLevel {
            entry += 1
            return .list([])
        }
        var elements = [try readSlot(index + 1)]
        while let next = try peek(), next.repetition >= list.repetitionLevel {
            guard next.repetition == list.repetitionLevel else {
                throw .corrupt("repetition level \(next.repetition) continues a list that has ended")
            }
            guard next.definition >= list.definedLevel else {
                throw .corrupt("definition level \(next.definition) for an element of a list that is empty or null")
            }
            elements.append(try readSlot(index + 1))
        }
        return .list(elements)
    }
}
