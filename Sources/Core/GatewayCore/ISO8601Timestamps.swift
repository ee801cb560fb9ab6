/// Parses and formats the ISO-8601 shapes dates take in stores (SQLite text columns, JSON documents), without Foundation's
/// formatters (which are slow and not Sendable): `YYYY-MM-DD`, then optionally `T` or a space,
/// `HH:MM`, `:SS`, `.fraction`, and `Z` or `±HH:MM` (no zone means UTC).
public enum ISO8601Timestamps {
    /// Parses ISO 8601 text as the gateway and CloudKit write it (date, time, optional fraction,
    /// `Z` or an offset); `nil` when it is not such a timestamp.
    public static func parse(_ text: String) -> Timestamp? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ digits: Int) -> Int? {
            guard index + digits <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + digits] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            index += digits
            return value
        }
        func expect(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }
        // A year outside 0000–9999 takes a sign and at least four digits (ISO 8601's expanded
        // years, as JavaScript writes them): `-0043` is 44 BC, `+10000` the year 10000.
        var yearSign = 0
        if index < bytes.count, bytes[index] == 43 || bytes[index] == 45 {
            yearSign = bytes[index] == 45 ? -1 : 1
            index += 1
        }
        var yearDigits = 4
        if yearSign != 0 {
            while index + yearDigits < bytes.count, yearDigits < 9, bytes[index + yearDigits] >= 48 && bytes[index + yearDigits] <= 57 { yearDigits += 1 }
        }
        guard let unsignedYear = number(yearDigits), expect(45), let month = number(2), expect(45), let day = number(2),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        let year = yearSign < 0 ? -unsignedYear : unsignedYear
        var hour = 0, minute = 0, second = 0, milliseconds = 0, offsetMinutes = 0
        if index < bytes.count && (bytes[index] == 84 || bytes[index] == 32) {
            index += 1
            guard let h = number(2), expect(58), let m = number(2), h < 24, m < 60 else { return nil }
            hour = h
            minute = m
            if expect(58) {
                guard let s = number(2), s < 61 else { return nil }
                second = s
                if expect(46) {
                    var scale = 100
                    var digits = 0
                    while index < bytes.count, bytes[index] >= 48 && bytes[index] <= 57 {
                        milliseconds += Int(bytes[index] - 48) * scale
                        scale /= 10
                        index += 1
                        digits += 1
                    }
                    guard digits > 0 else { return nil }
                }
            }
            if expect(90) {
                offsetMinutes = 0
            } else if index < bytes.count && (bytes[index] == 43 || bytes[index] == 45) {
                let sign = bytes[index] == 45 ? -1 : 1
                index += 1
                guard let oh = number(2) else { return nil }
                _ = expect(58)
                guard let om = number(2) else { return nil }
                offsetMinutes = sign * (oh * 60 + om)
            }
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return Timestamp(millisecondsSince1970: seconds * 1000 + Int64(milliseconds))
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ`, in UTC; a year before 0000 or after 9999 as an expanded year
    /// (`-0043-03-15T…`, `+10000-01-01T…`), which ``parse(_:)`` reads back.
    public static func format(_ timestamp: Timestamp) -> String {
        let milliseconds = timestamp.millisecondsSince1970
        let seconds = milliseconds.floorDivided(by: 1000)
        let millis = Int(milliseconds - seconds * 1000)
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civilFromDays(Int(days))
        guard (0...9999).contains(year) else {
            func pad(_ value: Int, _ width: Int) -> String {
                let text = String(value)
                return String(repeating: "0", count: max(0, width - text.count)) + text
            }
            let expandedYear = (year < 0 ? "-" : "+") + pad(abs(year), 4)
            return "\(expandedYear)-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(millis, 3))Z"
        }
        // The common case, digit by digit into one buffer: formatting runs per value on bulk paths.
        return String(unsafeUninitializedCapacity: 24) { text in
            func put(_ value: Int, _ width: Int, at offset: Int) {
                var value = value
                for index in stride(from: offset + width - 1, through: offset, by: -1) {
                    text[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, 4, at: 0)
            text[4] = UInt8(ascii: "-")
            put(month, 2, at: 5)
            text[7] = UInt8(ascii: "-")
            put(day, 2, at: 8)
            text[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, 2, at: 11)
            text[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, 2, at: 14)
            text[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, 2, at: 17)
            text[19] = UInt8(ascii: ".")
            put(millis, 3, at: 20)
            text[23] = UInt8(ascii: "Z")
            return 24
        }
    }

    // Howard Hinnant's days-from-civil algorithms (proleptic Gregorian calendar).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
