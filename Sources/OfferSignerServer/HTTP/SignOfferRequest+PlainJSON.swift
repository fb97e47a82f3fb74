import NIOCore
import OfferApplication

extension SignOfferRequest {
    /// Reads the common shape of a signing request without `JSONDecoder`: one flat object whose keys are the
    /// request's own and whose values are strings of printable ASCII with no escape, for example
    /// `{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"8c1d…"}`.
    ///
    /// `nil` for anything else — another key, a duplicate, `null`, a number, an escape, a byte outside printable
    /// ASCII, a missing `productIdentifier` or `offerIdentifier`, an unknown `format`, trailing text — and the
    /// caller then decodes with ``Request/decodeJSON(as:from:)``, which accepts or refuses it with the API's errors.
    /// So on what it accepts it gives exactly what `JSONDecoder` gives (compared in `PlainJSONTests`), and it never
    /// decides a refusal. The event-loop signing path uses it: the decoder was 4 % of a signing request's CPU.
    init?(plainJSON buffer: ByteBuffer) {
        guard buffer.readableBytes <= OfferSignerRequestContext.maximumBodySize else { return nil }
        let parsed: [(Field, String)]? = buffer.withUnsafeReadableBytes { bytes in
            var reader = PlainJSONReader(bytes: bytes)
            return reader.fields()
        }
        guard let parsed else { return nil }
        var values = [String?](repeating: nil, count: Field.allCases.count)
        for (field, value) in parsed {
            guard values[field.rawValue] == nil else { return nil }  // a duplicate: the full decoder refuses it
            values[field.rawValue] = value
        }
        guard let productIdentifier = values[Field.productIdentifier.rawValue],
            let offerIdentifier = values[Field.offerIdentifier.rawValue]
        else { return nil }
        var format: OfferSignatureFormat?
        if let text = values[Field.format.rawValue] {
            guard let known = OfferSignatureFormat(rawValue: text) else { return nil }
            format = known
        }
        self.init(
            bundleIdentifier: values[Field.bundleIdentifier.rawValue],
            productIdentifier: productIdentifier,
            offerIdentifier: offerIdentifier,
            applicationUsername: values[Field.applicationUsername.rawValue] ?? "",
            format: format,
            transactionId: values[Field.transactionId.rawValue],
            signedTransaction: values[Field.signedTransaction.rawValue]
        )
    }

    /// The request's keys, as ``CodingKeys`` spells them.
    fileprivate enum Field: Int, CaseIterable {
        case bundleIdentifier, productIdentifier, offerIdentifier, applicationUsername, format, transactionId, signedTransaction

        private static let names: [(Field, [UInt8])] = allCases.map { ($0, Array("\($0)".utf8)) }

        init?(_ bytes: UnsafeRawBufferPointer.SubSequence) {
            guard let found = Self.names.first(where: { $0.1.count == bytes.count && $0.1.elementsEqual(bytes) }) else { return nil }
            self = found.0
        }
    }
}

/// The byte reader behind ``SignOfferRequest/init(plainJSON:)``.
private struct PlainJSONReader {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// `{ "key" : "value" , … }` with JSON's white space, and nothing after it but white space; `nil` otherwise.
    mutating func fields() -> [(SignOfferRequest.Field, String)]? {
        var fields: [(SignOfferRequest.Field, String)] = []
        fields.reserveCapacity(4)
        skipSpace()
        guard take(UInt8(ascii: "{")) else { return nil }
        skipSpace()
        if take(UInt8(ascii: "}")) {
            return atEnd() ? fields : nil
        }
        while true {
            guard let key = string(), let field = SignOfferRequest.Field(key) else { return nil }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            guard let value = string() else { return nil }
            fields.append((field, String(decoding: value, as: UTF8.self)))
            skipSpace()
            if take(UInt8(ascii: ",")) {
                skipSpace()
                continue
            }
            guard take(UInt8(ascii: "}")) else { return nil }
            return atEnd() ? fields : nil
        }
    }

    /// A string literal's contents, when they are printable ASCII without `"` or `\` (so nothing to unescape).
    private mutating func string() -> UnsafeRawBufferPointer.SubSequence? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return bytes[start..<index]
            }
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// JSON's white space (RFC 8259 §2): space, tab, line feed, carriage return.
    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func atEnd() -> Bool {
        skipSpace()
        return index == bytes.count
    }
}
