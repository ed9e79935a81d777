
/// Overflow-checked arithmetic for cursors built from numbers an API sent.
///
/// Page numbers, offsets and counts in a response body are untrusted: `"page": 9223372036854775807` made
/// `page + 1` trap (found by `scripts/fuzz/fuzz providers`). Parsers combine such numbers with these helpers and
/// treat `nil` as "no further page".
extension Int {
    /// `self + other`, or `nil` when the sum does not fit.
    func addingChecked(_ other: Int) -> Int? {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? nil : sum
    }

    /// `self * other`, clamped to `Int.min...Int.max`, for comparisons against a cap.
    func multipliedSaturating(by other: Int) -> Int {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) == (other < 0) ? .max : .min
    }
}
