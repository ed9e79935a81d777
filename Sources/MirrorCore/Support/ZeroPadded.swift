/// `value` in decimal, padded with zeros to at least `width` digits (`zeroPadded(42, width: 5)` is `00042`).
package func zeroPadded(_ value: Int, width: Int) -> String {
    let digits = String(value)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}
