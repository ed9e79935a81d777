/// The rows of some columns of a `ParquetFile`, read one row group at a time.
///
/// Iterate it synchronously, with `makeIterator()` and `next()`, or as an `AsyncSequence` (`for try await row in rows`,
/// which reads on the calling task: the reads are short positioned reads of one column chunk each). Each row has one
/// value per column asked for, in that order. An iteration that throws is over: its `next()` returns nil afterwards.
///
/// ```swift
/// var iterator = try reader.rows(columns: ["url", "caption"]).makeIterator()
/// while let row = try iterator.next() { … }
/// ```
public struct ParquetRows: AsyncSequence, Sendable {
    public typealias Element = [ParquetValue]
    public typealias Failure = ParquetError

    let file: ParquetFile
    let plans: [ColumnPlan]

    /// The columns, by name, in the order of each row's values.
    public var columns: [String] { plans.map(\.name) }

    public func makeIterator() -> Iterator {
        Iterator(file: file, plans: plans)
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: makeIterator())
    }

    /// Reads rows synchronously.
    public struct Iterator {
        private let file: ParquetFile
        private let plans: [ColumnPlan]
        private var nextRowGroup = 0
        private var currentRowGroup = -1
        private var readers: [ColumnRowReader] = []
        private var rowsLeft: Int64 = 0
        private var isFinished = false

        init(file: ParquetFile, plans: [ColumnPlan]) {
            self.file = file
            self.plans = plans
        }

        /// The next row, or nil after the last.
        public mutating func next() throws(ParquetError) -> [ParquetValue]? {
            guard !isFinished else { return nil }
            do throws(ParquetError) {
                return try advance()
            } catch {
                isFinished = true
                readers = []
                throw error
            }
        }

        private mutating func advance() throws(ParquetError) -> [ParquetValue]? {
            while rowsLeft == 0 {
                // The row group just read must have no entries past its rows.
                for (index, plan) in plans.enumerated() where index < readers.count {
                    guard try !readers[index].hasMoreEntries() else {
                        throw .corrupt("column \(quoted(plan.name)), row group \(currentRowGroup): more values than the row group's rows")
                    }
                }
                readers = []
                guard nextRowGroup < file.metadata.rowGroups.count else {
                    isFinished = true
                    return nil
                }
                currentRowGroup = nextRowGroup
                nextRowGroup += 1
                (readers, rowsLeft) = try file.openRowGroup(currentRowGroup, plans: plans)
            }
            var row: [ParquetValue] = []
            row.reserveCapacity(readers.count)
            for index in readers.indices {
                let value: ParquetValue?
                do throws(ParquetError) {
                    value = try readers[index].nextRow()
                } catch {
                    throw error.within("column \(quoted(plans[index].name)), row group \(currentRowGroup)")
                }
                guard let value else {
                    throw .corrupt("column \(quoted(plans[index].name)), row group \(currentRowGroup): fewer values than the row group's rows")
                }
                row.append(value)
            }
            rowsLeft -= 1
            return row
        }
    }

    /// Reads rows for `for try await`, on the calling task.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: Iterator

        public mutating func next() async throws(ParquetError) -> [ParquetValue]? {
            try base.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(ParquetError) -> [ParquetValue]? {
            try base.next()
        }
    }
}
