/// Physical values to `ParquetValue`, their logical type applied: integers signed or unsigned, text validated as UTF-8,
/// timestamps, dates and times as ISO 8601 text, decimals as plain digits, UUIDs as their usual text, FLOAT16 widened.
extension ValueStore {
    func value(at index: Int, leaf: LeafType) throws(ParquetError) -> ParquetValue {
        guard index >= 0, index < count else { throw .corrupt("a page has fewer values than its levels say") }
        switch self {
        case .dictionary(let indices, let values):
            return try values.value(at: Int(indices[index]), leaf: leaf)
        case .booleans(let values):
            return .bool(values[index])
        case .int32s(let values):
            return try convert(Int64(values[index]), leaf: leaf)
        case .int64s(let values):
            return try convert(values[index], leaf: leaf)
        case .floats(let values):
            return .double(Double(values[index]))
        case .doubles(let values):
            return .double(values[index])
        case .fixed(let width, let bytes):
            return try convert(bytes[(index * width)..<((index + 1) * width)], leaf: leaf)
        case .variable(let bytes, let ranges):
            return try convert(bytes[ranges[index]], leaf: leaf)
        }
    }

    private func convert(_ value: Int64, leaf: LeafType) throws(ParquetError) -> ParquetValue {
        switch leaf.conversion {
        case .unsigned:
            return .uint(leaf.physical == .int32 ? UInt64(UInt32(truncatingIfNeeded: value)) : UInt64(bitPattern: value))
        case .date: return .string(Timestamps.date(days: value))
        case .timestamp(let unit): return .string(Timestamps.timestamp(value, unit: unit))
        case .time(let unit): return .string(Timestamps.time(value, unit: unit))
        case .decimal(let scale):
            return .string(Decimals.text(negative: value < 0, magnitude: Decimals.limbs(value.magnitude), scale: scale))
        default: return .int(value)
        }
    }

    private func convert(_ bytes: ArraySlice<UInt8>, leaf: LeafType) throws(ParquetError) -> ParquetValue {
        switch leaf.conversion {
        case .string:
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw .corrupt("a \(leaf.type) value is not UTF-8")
            }
            return .string(text)
        case .int96:
            guard bytes.count == 12 else { throw .corrupt("an INT96 value of \(bytes.count) bytes") }
            return .string(Timestamps.int96(bytes))
        case .decimal(let scale):
            return .string(try Decimals.text(bigEndianTwosComplement: bytes, scale: scale))
        case .uuid:
            guard bytes.count == 16 else { throw .corrupt("a UUID value of \(bytes.count) bytes") }
            let hex = bytes.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }
            return .string([hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-"))
        case .float16:
            guard bytes.count == 2 else { throw .corrupt("a FLOAT16 value of \(bytes.count) bytes") }
            return .double(Self.float16(UInt16(bytes[bytes.startIndex]) | UInt16(bytes[bytes.startIndex + 1]) << 8))
        default:
            return .bytes(Array(bytes))
        }
    }

    /// IEEE 754 half precision, widened exactly.
    static func float16(_ bits: UInt16) -> Double {
        let sign: Double = bits & 0x8000 == 0 ? 1 : -1
        let exponent = Int(bits >> 10 & 0x1F)
        let fraction = Double(bits & 0x3FF)
        switch exponent {
        case 0: return sign * fraction * 0x1p-24
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default: return sign * (1 + fraction / 1024) * Double(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}

/// ISO 8601 text for dates, times and instants, in the proleptic Gregorian calendar, UTC, for any Int64 count: years
/// past 9999 or before 0 get a sign and as many digits as they need.
enum Timestamps {
    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = value / divisor
        let remainder = value % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// Year, month and day of `days` after 1970-01-01 (Howard Hinnant's civil_from_days).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDivision(shifted, 146_097).quotient
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func padded(_ value: Int64, _ digits: Int) -> String {
        let text = String(value.magnitude)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    static func date(days: Int64) -> String {
        let (year, month, day) = civil(days: days)
        let yearText = (0...9999).contains(year) ? padded(year, 4) : (year < 0 ? "-" : "+") + padded(year, 4)
        return "\(yearText)-\(padded(month, 2))-\(padded(day, 2))"
    }

    private static func perSecond(_ unit: ParquetType.TimeUnit) -> (count: Int64, digits: Int) {
        switch unit {
        case .milliseconds: (1000, 3)
        case .microseconds: (1_000_000, 6)
        case .nanoseconds: (1_000_000_000, 9)
        }
    }

    /// `value` units after the epoch: `YYYY-MM-DDTHH:MM:SS.fff…Z`.
    static func timestamp(_ value: Int64, unit: ParquetType.TimeUnit) -> String {
        let (count, digits) = perSecond(unit)
        let (seconds, fraction) = floorDivision(value, count)
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        return instant(days: days, secondOfDay: secondOfDay, fraction: fraction, digits: digits)
    }

    private static func instant(days: Int64, secondOfDay: Int64, fraction: Int64, digits: Int) -> String {
        "\(date(days: days))T\(padded(secondOfDay / 3600, 2)):\(padded(secondOfDay / 60 % 60, 2)):"
            + "\(padded(secondOfDay % 60, 2)).\(padded(fraction, digits))Z"
    }

    /// INT96: nanoseconds of the day (8 bytes) and the Julian day (4 bytes), little-endian.
    static func int96(_ bytes: ArraySlice<UInt8>) -> String {
        var nanoseconds: UInt64 = 0
        var julian: UInt32 = 0
        for (offset, byte) in bytes.enumerated() {
            if offset < 8 { nanoseconds |= UInt64(byte) << UInt64(8 * offset) } else { julian |= UInt32(byte) << UInt32(8 * (offset - 8)) }
        }
        let (extraDays, nanosecondOfDay) = floorDivision(Int64(bitPattern: nanoseconds), 86_400 * 1_000_000_000)
        let days = Int64(Int32(bitPattern: julian)) - 2_440_588 + extraDays
        let (secondOfDay, fraction) = floorDivision(nanosecondOfDay, 1_000_000_000)
        return instant(days: days, secondOfDay: secondOfDay, fraction: fraction, digits: 9)
    }

    /// `value` units after midnight: `HH:MM:SS.fff…` (hours past 23 and a sign if the file says so).
    static func time(_ value: Int64, unit: ParquetType.TimeUnit) -> String {
        let (count, digits) = perSecond(unit)
        let magnitude = value.magnitude
        let seconds = magnitude / UInt64(count)
        let fraction = Int64(magnitude % UInt64(count))
        let hours = String(seconds / 3600)
        return (value < 0 ? "-" : "") + (hours.count < 2 ? "0" + hours : hours)
            + ":\(padded(Int64(seconds / 60 % 60), 2)):\(padded(Int64(seconds % 60), 2)).\(padded(fraction, digits))"
    }
}

/// Decimal text from unscaled integers of any width.
enum Decimals {
    /// The longest two's complement value read; 38 digits take 16 bytes, the widest any writer uses for DECIMAL.
    static let maximumBytes = 256

    /// The 32-bit limbs of `value`, most significant first.
    static func limbs(_ value: UInt64) -> [UInt32] {
        [UInt32(truncatingIfNeeded: value >> 32), UInt32(truncatingIfNeeded: value)]
    }

    static func text(bigEndianTwosComplement bytes: ArraySlice<UInt8>, scale: Int) throws(ParquetError) -> String {
        guard let first = bytes.first else { throw .corrupt("a DECIMAL value has no bytes") }
        guard bytes.count <= maximumBytes else { throw .corrupt("a DECIMAL value of \(bytes.count) bytes") }
        let negative = first & 0x80 != 0
        var magnitude = Array(bytes)
        if negative {
            // Two's complement: invert and add one.
            var carry = true
            for index in magnitude.indices.reversed() {
                magnitude[index] = ~magnitude[index]
                if carry {
                    let (sum, overflow) = magnitude[index].addingReportingOverflow(1)
                    magnitude[index] = sum
                    carry = overflow
                }
            }
        }
        // Left-pad to whole 32-bit limbs.
        let padding = (4 - magnitude.count % 4) % 4
        magnitude = [UInt8](repeating: 0, count: padding) + magnitude
        var limbs: [UInt32] = []
        limbs.reserveCapacity(magnitude.count / 4)
        var index = 0
        while index < magnitude.count {
            limbs.append(UInt32(magnitude[index]) << 24 | UInt32(magnitude[index + 1]) << 16
                | UInt32(magnitude[index + 2]) << 8 | UInt32(magnitude[index + 3]))
            index += 4
        }
        return text(negative: negative, magnitude: limbs, scale: scale)
    }

    /// `magnitude` (32-bit limbs, most significant first) with `scale` digits after the point, and a sign.
    static func text(negative: Bool, magnitude: [UInt32], scale: Int) -> String {
        var limbs = magnitude
        var chunks: [UInt32] = []  // base 10^9, least significant first
        while limbs.contains(where: { $0 != 0 }) {
            var remainder: UInt64 = 0
            for index in limbs.indices {
                let current = remainder << 32 | UInt64(limbs[index])
                limbs[index] = UInt32(current / 1_000_000_000)
                remainder = current % 1_000_000_000
            }
            chunks.append(UInt32(remainder))
        }
        var digits = chunks.last.map { String($0) } ?? "0"
        for chunk in chunks.dropLast().reversed() {
            let text = String(chunk)
            digits += String(repeating: "0", count: 9 - text.count) + text
        }
        let isZero = chunks.isEmpty
        if scale > 0 {
            if digits.count <= scale { digits = String(repeating: "0", count: scale - digits.count + 1) + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -scale))
        }
        return (negative && !isZero ? "-" : "") + digits
    }
}
