import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
import OfferApplication
#endif

/// A log handler that writes one JSON object per line (JSON Lines):
///
///     {"time":"2026-01-02T03:04:05.678Z","level":"info","label":"offer-signer","message":"request","method":"POST",…}
///
/// `time` is RFC 3339 in UTC with milliseconds; `level`, `label` and `message` come next, then every metadata
/// value as a string field (the handler's, the metadata provider's, then the line's own), keys sorted. A
/// metadata key that would shadow one of the four fixed fields is written as `metadata.<key>`. Strings are
/// escaped as RFC 8259 requires (quotes, backslashes, control characters), so a message cannot break a line
/// or forge a field.
public struct JSONLogHandler: LogHandler {
    /// Where a finished line goes (without its newline).
    public typealias Output = @Sendable (String) -> Void

    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: Output

    /// A handler writing to standard error.
    public static func standardError(label: String, metadataProvider: Logger.MetadataProvider? = nil) -> JSONLogHandler {
        JSONLogHandler(label: label, metadataProvider: metadataProvider, output: StandardErrorLines.emit)
    }

    /// A handler writing each line to `output`.
    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil, output: @escaping Output) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        // The handler's metadata, the provider's, the line's own — a later one wins a key — sorted by key, without
        // merging dictionaries; the sort moves indices, not the fields (an access line a request: docs/PERFORMANCE.md).
        // Keys and values in arrays of their own: the sort compares keys (small strings) without copying values.
        let provided = metadataProvider?.get()
        let count = metadata.count + (provided?.count ?? 0) + (event.metadata?.count ?? 0)
        var keys: [String] = []
        var values: [Logger.Metadata.Value] = []
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
        func add(_ source: Logger.Metadata?) {
            for (key, value) in source ?? [:] {
                keys.append(key)
                values.append(value)
            }
        }
        add(metadata)
        add(provided)
        add(event.metadata)
        // By key, then by position (the handler's, the provider's, the line's own), so the last of a key wins.
        var order = Array(keys.indices)
        order.sort { keys[$0] != keys[$1] ? keys[$0] < keys[$1] : $0 < $1 }
        var line = LineWriter(time: Date(), level: event.level, label: label, message: event.message.description)
        for (position, index) in order.enumerated() where position + 1 == order.count || keys[order[position + 1]] != keys[index] {
            line.field(keys[index], values[index])
        }
        output(line.finished())
    }

    /// One line of JSON (no newline).
    public static func line(time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        line(time: time, level: level, label: label, message: message, fields: metadata.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// One line of JSON (no newline) with metadata fields already sorted by key, each key once.
    static func line(time: Date, level: Logger.Level, label: String, message: String, fields: [(key: String, value: Logger.Metadata.Value)]) -> String
    {
        var line = LineWriter(time: time, level: level, label: label, message: message)
        for (key, value) in fields { line.field(key, value) }
        return line.finished()
    }

    /// A metadata value as text: strings as they are, the rest as swift-log prints them.
    static func text(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string): string
        case .stringConvertible(let convertible): convertible.description
        case .dictionary, .array: value.description
        }
    }

    /// Appends `string`'s characters, escaped for the inside of a JSON string literal.
    static func appendEscaped(_ string: String, to line: inout String) {
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case "\u{2028}", "\u{2029}", "\u{7F}":  // valid JSON, but not every line-oriented reader agrees
                line += String(format: "\\u%04x", scalar.value)
            default:
                if scalar.value < 0x20 {
                    line += String(format: "\\u%04x", scalar.value)
                } else {
                    line.unicodeScalars.append(scalar)
                }
            }
        }
    }

    /// `2026-01-02T03:04:05.678Z`.
    public static func rfc3339(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        var milliseconds = Int(((interval - Double(seconds)) * 1000).rounded(.down))
        if milliseconds >= 1000 { milliseconds = 999 }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let year = Int(parts.tm_year) + 1900
        guard (0...9999).contains(year) else {
            return String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                year,
                Int(parts.tm_mon) + 1,
                Int(parts.tm_mday),
                Int(parts.tm_hour),
                Int(parts.tm_min),
                Int(parts.tm_sec),
                milliseconds
            )
        }
        // Written digit by digit: `String(format:)` costs microseconds on every log line.
        return String(unsafeUninitializedCapacity: 24) { buffer in
            var index = 0
            func put(_ value: Int, digits: Int) {
                var divisor = 1
                for _ in 1..<digits { divisor *= 10 }
                while divisor > 0 {
                    buffer[index] = UInt8(ascii: "0") + UInt8(value / divisor % 10)
                    index += 1
                    divisor /= 10
                }
            }
            func put(_ character: Unicode.Scalar) {
                buffer[index] = UInt8(ascii: character)
                index += 1
            }
            put(year, digits: 4)
            put("-")
            put(Int(parts.tm_mon) + 1, digits: 2)
            put("-")
            put(Int(parts.tm_mday), digits: 2)
            put("T")
            put(Int(parts.tm_hour), digits: 2)
            put(":")
            put(Int(parts.tm_min), digits: 2)
            put(":")
            put(Int(parts.tm_sec), digits: 2)
            put(".")
            put(milliseconds, digits: 3)
            put("Z")
            return index
        }
    }
}

/// Whole lines to standard error, one `write` each, never interleaved.
private enum StandardErrorLines {
    static let lock = Mutex(())

    @Sendable static func emit(_ line: String) {
        var text = line
        lock.withLock { _ in
            text.withUTF8 { buffer in
                // The line and its newline in one `writev`, without copying the line to append the newline.
                var newline = UInt8(ascii: "\n")
                let written = withUnsafeMutablePointer(to: &newline) { newline in
                    withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { parts in
                        parts[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress), iov_len: buffer.count)
                        parts[1] = iovec(iov_base: UnsafeMutableRawPointer(newline), iov_len: 1)
                        return writev(2, parts.baseAddress, 2)
                    }
                }
                if written == buffer.count + 1 { return }
                if written < 0, errno != EINTR { return }
                // Rare (a short write, an interruption): the rest, from a copy with the newline.
                writeRest(Array(buffer) + [UInt8(ascii: "\n")], from: max(written, 0))
            }
        }
    }

    /// Writes `bytes` from `offset` on to standard error, retrying after a short write or an interruption; gives up
    /// on an error.
    private static func writeRest(_ bytes: [UInt8], from offset: Int) {
        bytes.withUnsafeBytes { bytes in
            var offset = offset
            while offset < bytes.count {
                let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}

/// The log format `LOG_FORMAT` names.
public enum LogFormat: String, Sendable, CaseIterable {
    /// One JSON object per line (``JSONLogHandler``): for log collectors.
    case json
    /// swift-log's human-readable lines: for a terminal.
    case text

    /// The default: `text` when standard error is a terminal, else `json`.
    public static var forStandardError: LogFormat { isatty(2) != 0 ? .text : .json }

    /// The format `LOG_FORMAT` names; unset: `json` unless standard error is a terminal.
    /// - Parameter standardErrorIsTerminal: whether standard error is a terminal (`isatty(2)`).
    /// - Throws: ``ConfigurationError`` for a name that is not a format.
    public static func configured(
        _ environment: [String: String],
        standardErrorIsTerminal: Bool = isatty(2) != 0
    ) throws(ConfigurationError) -> LogFormat {
        guard let text = ConfigurationVariable.reader(environment).string(.logFormat) else {
            return standardErrorIsTerminal ? .text : .json
        }
        guard let format = LogFormat(rawValue: text.lowercased()) else {
            throw ConfigurationError(.invalidConfiguration, "\(variable: .logFormat)=\(text.prefix(20)) is not a log format; use json or text.")
        }
        return format
    }

    /// A handler of this format writing to standard error.
    public func standardErrorHandler(
        label: String,
        level: Logger.Level,
        metadataProvider: Logger.MetadataProvider? = RequestMetadata.provider
    ) -> any LogHandler {
        switch self {
        case .json:
            var handler = JSONLogHandler.standardError(label: label, metadataProvider: metadataProvider)
            handler.logLevel = level
            return handler
        case .text:
            var handler = StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
            handler.logLevel = level
            return handler
        }
    }
}

/// The key of ``CustomerHash`` that `OFFER_SIGNER_LOG_HASH_KEY` sets (16 characters at least), or `nil` (a random
/// key per process).
/// - Throws: ``ConfigurationError`` for a key shorter than 16 characters.
public func configuredLogHashKey(_ environment: [String: String]) throws(ConfigurationError) -> String? {
    guard let key = ConfigurationVariable.reader(environment).string(.logHashKey) else { return nil }
    guard key.count >= 16 else {
        throw ConfigurationError(
            .invalidConfiguration,
            """
            \(variable: .logHashKey) is shorter than 16 characters; use a long random value (for example `openssl rand -hex 32`), the same on \
            every replica.
            """
        )
    }
    return key
}
