import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import Logging
import NIOCore
import OfferApplication
import OfferSigning
import Synchronization

/// A login JWT's header and claims, read as strict JSON and typed as RFC 7519 types them.
extension ClientAuthenticator {
    /// Reads one segment of a login JWT as strict JSON (``StrictJSON``: no duplicate claim, nothing a decoder
    /// would forgive) into an object.
    fileprivate static func object(_ data: Data, _ what: String) throws(OfferServiceError) -> [String: JSONValue] {
        if let violation = StrictJSON.violation(in: data) {
            throw OfferServiceError(
                .unauthorized,
                "The login token's \(what) is not strict JSON: \(violation.kind == .malformed ? "not RFC 8259" : "a name appears twice")."
            )
        }
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: data) else {
            throw OfferServiceError(.unauthorized, "The login token's \(what) is not a JSON object.")
        }
        return object
    }

    /// A login JWT's header: its algorithm; a `crit` parameter is refused, since this service understands no
    /// extension (RFC 7515 §4.1.11).
    struct LoginHeader {
        var alg: String
        /// The key that signed the token, when the header names one.
        var kid: String?

        init(_ data: Data) throws(OfferServiceError) {
            let object = try ClientAuthenticator.object(data, "header")
            guard case .string(let alg) = object["alg"] else {
                throw OfferServiceError(.unauthorized, "The login token's header has no alg string.")
            }
            if object["crit"] != nil {
                throw OfferServiceError(
                    .unauthorized,
                    "The login token's header names critical extensions (crit) this service does not understand; issue tokens without crit."
                )
            }
            switch object["kid"] {
            case nil: kid = nil
            case .string(let value): kid = value
            default: throw OfferServiceError(.unauthorized, "The login token's kid must be a string.")
            }
            self.alg = alg
        }
    }

    /// A login JWT's claims, each of the type RFC 7519 gives it: `exp`, `nbf`, `iat` numbers; `iss`, `sub` and the
    /// customer claim strings; `aud` a string or an array of strings. A claim of another type is refused, never
    /// read as absent.
    struct LoginClaims {
        var exp: Double?
        var nbf: Double?
        var iss: String?
        var aud: [String] = []
        var customer: String?

        init(_ data: Data, customerClaim: String) throws(OfferServiceError) {
            let object = try ClientAuthenticator.object(data, "claims")
            func number(_ name: String) throws(OfferServiceError) -> Double? {
                guard let value = object[name] else { return nil }
                guard case .number(let number) = value, number.isFinite else {
                    throw OfferServiceError(.unauthorized, "The login token's \(name) claim must be a number of seconds (NumericDate).")
                }
                return number
            }
            func string(_ name: String) throws(OfferServiceError) -> String? {
                guard let value = object[name] else { return nil }
                guard case .string(let text) = value else {
                    throw OfferServiceError(.unauthorized, "The login token's \(name) claim must be a string.")
                }
                return text
            }
            exp = try number("exp")
            nbf = try number("nbf")
            _ = try number("iat")
            iss = try string("iss")
            _ = try string("sub")
            customer = try string(customerClaim)
            switch object["aud"] {
            case nil: aud = []
            case .string(let one): aud = [one]
            case .array(let many):
                let strings = many.compactMap { if case .string(let text) = $0 { text } else { nil } }
                guard strings.count == many.count else {
                    throw OfferServiceError(.unauthorized, "The login token's aud claim must be a string or an array of strings.")
                }
                aud = strings
            default:
                throw OfferServiceError(.unauthorized, "The login token's aud claim must be a string or an array of strings.")
            }
        }
    }

    /// A JSON value by its type, for claims whose type is checked rather than assumed.
    enum JSONValue: Decodable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([JSONValue])
        case object([String: JSONValue])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([JSONValue].self) {
                self = .array(value)
            } else {
                self = .object(try container.decode([String: JSONValue].self))
            }
        }
    }

    /// What jwt-kit decodes while it checks the signature: nothing (the claims are read and judged above).
    struct SignatureOnly: JWTPayload {
        init(from decoder: any Decoder) throws {}
        func encode(to encoder: any Encoder) throws {}
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
