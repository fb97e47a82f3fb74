import Configuration
import Foundation

/// Typed reads of ``ConfigurationVariable``s: numbers, durations and lists, each with the range it accepts and one
/// refusal shape, `NAME=value is not <what> from <lower> to <upper> (<note>).` (the value cut to 20 characters, and
/// left out for a secret). An empty value counts as unset everywhere.
extension ConfigReader {
    /// A whole number within `range`; `nil` when the variable is not set.
    ///
    /// Read with swift-configuration's `int(forKey:)`; spaces around the number are tolerated.
    /// - Parameters:
    ///   - variable: the variable.
    ///   - range: the values accepted; `Int.min...Int.max` says only "a whole number".
    ///   - unit: what the number counts (`seconds`), named in the refusal.
    ///   - note: a hint added to the refusal in parentheses (what the number is, a limit worth knowing).
    /// - Throws: ``ConfigurationError`` for text that is not a whole number, or one outside `range`.
    public func integer(
        _ variable: ConfigurationVariable,
        in range: ClosedRange<Int>,
        unit: String? = nil,
        note: String? = nil
    ) throws(ConfigurationError) -> Int? {
        guard let text = string(variable) else { return nil }
        let value = int(forKey: variable.key, isSecret: variable.isSecret) ?? Int(text.trimmingCharacters(in: .whitespaces))
        guard let value, range.contains(value) else {
            let full = range == Int.min...Int.max
            throw .refusing(
                variable,
                text,
                expected: "a whole number" + (unit.map { " of \($0)" } ?? ""),
                range: full ? nil : (String(range.lowerBound), String(range.upperBound)),
                note: note
            )
        }
        return value
    }

    /// A duration within `range`, written `2s`, `1500ms`, `1.5s` or a bare number of seconds; `nil` when the
    /// variable is not set.
    /// - Parameters:
    ///   - variable: the variable.
    ///   - range: the durations accepted.
    ///   - note: a hint added to the refusal in parentheses (an example, what a bound means).
    /// - Throws: ``ConfigurationError`` for text that is not a duration, or one outside `range`.
    public func duration(
        _ variable: ConfigurationVariable,
        in range: ClosedRange<Duration>,
        note: String? = nil
    ) throws(ConfigurationError) -> Duration? {
        guard let text = string(variable) else { return nil }
        guard let value = Self.parseDuration(text), range.contains(value) else {
            throw .refusing(
                variable,
                text,
                expected: "a duration",
                range: (Self.describe(range.lowerBound), Self.describe(range.upperBound)),
                note: note
            )
        }
        return value
    }

    /// A comma-separated list, read with swift-configuration's `stringArray(forKey:)`: items trimmed, empty items
    /// dropped; `nil` when the variable is not set (a value of only commas is an empty list).
    public func list(_ variable: ConfigurationVariable) -> [String]? {
        guard string(variable) != nil else { return nil }
        return (stringArray(forKey: variable.key, isSecret: variable.isSecret) ?? []).filter { !$0.isEmpty }
    }

    /// `2s`, `1500ms`, `1.5s`, or a bare number of seconds (case and spaces aside), at most 10⁶ seconds.
    static func parseDuration(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let (number, scale): (Substring, Double) =
            trimmed.hasSuffix("ms") ? (trimmed.dropLast(2), 0.001) : trimmed.hasSuffix("s") ? (trimmed.dropLast(), 1) : (trimmed[...], 1)
        guard let value = Double(number.trimmingCharacters(in: .whitespaces)), value.isFinite, value >= 0, value <= 1e6 else { return nil }
        return .milliseconds(Int64((value * scale * 1000).rounded()))
    }

    /// `30s` for whole seconds, else `1500ms`.
    static func describe(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
    }
}

extension ConfigurationError {
    /// The refusal of a value a variable does not accept: `NAME=value is not <expected> from <lower> to <upper> (<note>).`
    static func refusing(
        _ variable: ConfigurationVariable,
        _ text: String,
        expected: String,
        range: (lower: String, upper: String)?,
        note: String?
    ) -> ConfigurationError {
        let given = variable.isSecret ? "\(variable: variable)" : "\(variable: variable)=\(text.prefix(20))"
        let bounds = range.map { " from \($0.lower) to \($0.upper)" } ?? ""
        return ConfigurationError(.invalidConfiguration, "\(given) is not \(expected)\(bounds)\(note.map { " (\($0))" } ?? "").")
    }
}
