extension ParquetFile {
    /// The limits a file must keep within: every size and count the file states is checked against them (and against
    /// the file's own size) before memory is reserved for it, so that a hostile or broken file fails with
    /// `ParquetError.overLimit` rather than exhausting memory.
    ///
    /// The defaults read anything real writers make (Arrow, parquet-mr, polars and DuckDB write pages of about 1 MiB and
    /// at most 20,000 rows by default) with room to spare. At the defaults, one page's decoded levels and values take at
    /// most about 80 MB, beside its column chunk.
    ///
    /// ```swift
    /// let reader = try ParquetFile(url: url, configuration: .init { $0.maxPageSize = 16 << 20 })
    /// ```
    public struct Configuration: Sendable, Hashable {
        // MARK: - Limits

        /// The footer's largest size. Default 64 MiB: a footer describes every column chunk, ~100 bytes each without
        /// statistics, so this admits a few hundred thousand chunks.
        public var maxFooterSize = 64 << 20
        /// A page's largest size, compressed or not, and the most bytes one page's values may decode to (DELTA_BYTE_ARRAY
        /// grows strings from their shared prefixes). Default 256 MiB; writers' pages are about 1 MiB.
        public var maxPageSize = 256 << 20
        /// The most values one page, or dictionary, may hold (nulls count: a page of nulls is a few bytes whatever its
        /// length). Default 1 << 22 (4,194,304).
        public var maxValuesPerPage = 1 << 22
        /// The largest column chunk, read whole when its column is asked for. Default 2 GiB.
        public var maxColumnChunkSize = 2 << 30

        /// The defaults.
        public init() {}

        /// The defaults, changed by `configure`.
        public init(_ configure: (inout Configuration) -> Void) {
            configure(&self)
        }
    }
}
