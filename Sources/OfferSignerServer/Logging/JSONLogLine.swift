import Foundation
import Logging

extension JSONLogHandler {
    /// A line written as UTF-8 bytes, turned into a string once at the end: appending to a `String` piece by piece
    /// cost ~20,000 instructions an access line (Benchmarks/Signing/instructions-per-request.sh).
    struct LineWriter {
        private var bytes: [UInt8] = []

        /// The line's fixed fields: `{"time":…,"level":…,"label":…,"message":…`.
        init(time: Date, level: Logger.Level, label: String, message: String) {
            bytes.reserveCapacity(512)  // one allocation for a typical line
            raw("{\"time\":\"")
            rawString(JSONLogHandler.rfc3339(time))
            raw("\",\"level\":\"")
            rawString(level.rawValue)
            raw("\",\"label\":")
            string(label)
            raw(",\"message\":")
            string(message)
        }

        /// A metadata field; a key that would shadow a fixed field is written as `metadata.<key>`.
        mutating func field(_ key: String, _ value: Logger.Metadata.Value) {
            raw(",")
            switch key {
            case "time", "level", "label", "message": string("metadata.\(key)")
            default: string(key)
            }
            raw(":")
            string(JSONLogHandler.text(value))
        }

        /// The line, closed.
        consuming func finished() -> String {
            raw("}")
            return String(decoding: bytes, as: UTF8.self)
        }

        private mutating func raw(_ text: StaticString) {
            bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }

        private mutating func rawString(_ text: String) {
            var text = text
            text.withUTF8 { bytes.append(contentsOf: $0) }
        }

        /// `text` as a JSON string literal (quotes, backslashes and control characters escaped by ``JSONLogHandler/appendEscaped(_:to:)``).
        private mutating func string(_ text: String) {
            bytes.append(UInt8(ascii: "\""))
            var text = text
            let plain = text.withUTF8 { utf8 in
                // Printable ASCII with nothing to escape: the common case, copied whole.
                for byte in utf8 where byte < 0x20 || byte >= 0x7F || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    return false
                }
                bytes.append(contentsOf: utf8)
                return true
            }
            if !plain {
                var escaped = ""
                JSONLogHandler.appendEscaped(text, to: &escaped)
                rawString(escaped)
            }
            bytes.append(UInt8(ascii: "\""))
        }
    }

}
