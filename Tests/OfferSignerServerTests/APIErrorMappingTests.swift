import AppStoreServerAPI
import Foundation
import HTTPTypes
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferKeys
import OfferSigning
import Testing

@testable import OfferSignerServer

/// The closed error vocabulary (issue 39): every code of the API has its status and is documented, every code of the
/// application's error types becomes one of them, and decoding errors name a field one way.
@Suite struct APIErrorMappingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The pages and the OpenAPI document that list the API's error codes.
    static func documentation() throws -> String {
        try ["docs/api.md", "docs/retention.md", "docs/policy.md", "docs/console.md", "Sources/OfferSignerServer/OpenAPI/openapi.yaml"]
            .map { try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8) }
            .joined(separator: "\n")
    }

    @Test func everyAPICodeIsDocumentedAndAnsweredWithAnErrorStatus() throws {
        let documentation = try Self.documentation()
        for kind in APIError.Code.Kind.allCases {
            let code = APIError.Code(kind)
            #expect(documentation.contains(code.rawValue), "\(code) is in no page of docs/ nor in openapi.yaml")
            #expect((400...599).contains(code.status.code), "\(code)")
            #expect(code.rawValue.allSatisfy { $0.isLowercase || $0 == "_" }, "\(code) is not snake_case")
        }
        #expect(Set(APIError.Code.Kind.allCases.map(\.rawValue)).count == APIError.Code.Kind.allCases.count)
    }

    /// An error body as the client reads it.
    static func body(_ error: APIError) throws -> [String: String] {
        let object = try JSONSerialization.jsonObject(with: Data(error.body.readableBytesView)) as? [String: Any]
        let detail = try #require(object?["error"] as? [String: Any])
        return detail.compactMapValues { $0 as? String }
    }

    @Test func everyPipelineCodeKeepsItsNameAndItsDocumentedStatus() throws {
        let retryAfter: [String: String] = [
            "store_unavailable": "1", "retention_timed_out": "1", "app_store_unavailable": "5", "issuer_not_configured": "3600",
            "dry_run_running": "\(PolicyAdministration.dryRunRetryAfterSeconds)",
        ]
        for kind in OfferServiceError.Code.Kind.allCases {
            let error = APIError(OfferServiceError(.init(kind), "What to do.", field: "f"))
            #expect(error.code.rawValue == kind.rawValue)
            #expect(error.status == error.code.status)
            #expect(error.headers[.retryAfter] == retryAfter[kind.rawValue], "\(kind)")
            #expect(try Self.body(error) == ["code": kind.rawValue, "message": "What to do.", "field": "f"])
        }
    }

    @Test func signingKeyAndPolicyCodesMapAsDocumented() {
        let signing = OfferSigningError.Code.Kind.allCases.map { APIError(OfferSigningError(.init($0), "m", field: "nonce")) }
        #expect(
            signing.map(\.code.rawValue) == [
                "invalid_request", "internal", "internal", "unknown_key", "no_signing_key", "signature_self_check_failed",
            ]
        )
        #expect(signing.map(\.status.code) == [400, 500, 500, 404, 503, 500])
        #expect(signing[1].message == APIError.internal.message, "a broken key's message is logged, not returned")
        #expect(signing[0].field == "nonce")

        let keys = KeyManagementError.Code.Kind.allCases.map { APIError(KeyManagementError(.init($0), "m")) }
        #expect(keys.map(\.code.rawValue) == ["unknown_key", "key_state_conflict", "key_reload_failed", "store_unavailable", "store_unavailable"])
        #expect(keys.map(\.status.code) == [404, 409, 422, 503, 503])

        let policy = APIError(PolicyError(.invalidPolicy, "line 3: unknown key"))
        #expect(policy.status == .badRequest)
        #expect(policy.code == APIError.Code.invalidPolicy)
        #expect(policy.message == "line 3: unknown key")
    }

    @Test func everyRetentionMessagingCodeKeepsItsName() {
        for kind in RetentionMessagingError.Code.Kind.allCases {
            let error = APIError(RetentionMessagingError(.init(kind), "m"))
            #expect(error.code.rawValue == kind.rawValue)
            let expected: Int =
                switch kind {
                case .notFound: 404
                case .alreadyExists, .noPassingTest, .performanceTestInProgress, .notApproved, .imageInUse, .limitReached,
                    .invalidConfiguration:
                    409
                case .unauthorized, .invalidResponse: 502
                case .rateLimited, .appStoreUnavailable: 503
                default: 422
                }
            #expect(error.status.code == expected, "\(kind)")
            #expect((error.headers[.retryAfter] != nil) == (expected == 503), "\(kind)")
        }
    }

    @Test func anUnknownErrorIsInternalAndSaysNothingOfItsType() throws {
        struct SomethingBroke: Error {}
        let error = APIError(pipeline: SomethingBroke(), logger: Logger(label: "test"))
        #expect(error.status == .internalServerError)
        #expect(error.code == APIError.Code.internal)
        #expect(try !Self.body(error).values.joined().contains("SomethingBroke"))
    }

    struct Order: Decodable {
        struct Item: Decodable { var price: Double }
        var items: [Item]
    }

    /// The error decoding `text` as an ``Order`` throws.
    static func decodingError(_ text: String) throws -> DecodingError {
        do {
            _ = try JSONDecoder().decode(Order.self, from: Data(text.utf8))
        } catch let error as DecodingError {
            return error
        }
        throw TestFailure(text)
    }

    struct TestFailure: Error {
        var text: String
        init(_ text: String) { self.text = "\(text) decoded" }
    }

    /// One translator: the API's field and the App Store data's message name the same path, `items[1].price`.
    @Test func decodingPathsAreWrittenOneWay() throws {
        let decodingError = try Self.decodingError(#"{"items":[{"price":1},{"price":"free"}]}"#)
        let problem = DecodingProblem(decodingError)
        #expect(problem.field == "items[1].price")
        #expect(problem.message == "items[1].price must be a number.")
        let error = APIError(decodingError)
        #expect(error.code == APIError.Code.invalidRequest)
        #expect(error.field == problem.field)
        #expect(error.message == "items[1].price must be a number.")

        let missing = try Self.decodingError(#"{"items":[{}]}"#)
        #expect(APIError(missing).field == "items[0].price")
        #expect(APIError(missing).message == "items[0].price is required.")
        #expect(DecodingProblem(missing).message == "items[0].price is required.")
    }

    @Test func aDocumentThatIsNotJSONIsMalformedAndAnArrayIsNotAnObject() throws {
        #expect(APIError(try Self.decodingError("{")).code == APIError.Code.malformedJSON)
        let array = APIError(try Self.decodingError("[]"))
        #expect(array.code == APIError.Code.invalidRequest)
        #expect(array.field == nil)
        #expect(array.message == "The request body must be a JSON object.")
    }

    @Test("an error envelope written directly is byte for byte what the API's encoder writes, for hostile strings too")
    func errorEnvelopeText() throws {
        // Every printable ASCII character, now and then one the writer escapes or a character beyond ASCII.
        let plain = (0x20...0x7E).map { Character(UnicodeScalar(UInt8($0))) }
        let other = Array("\"\\é\u{7F}\n\t\u{0}\u{1F}\u{2028}漢🎟️")
        var generator = SystemRandomNumberGenerator()
        func text(_ most: Int) -> String {
            String(
                (0..<Int.random(in: 0...most, using: &generator)).map { _ in
                    Int.random(in: 0..<8, using: &generator) == 0 ? other.randomElement(using: &generator)! : plain.randomElement(using: &generator)!
                }
            )
        }
        func expectEncoderText(_ detail: ErrorEnvelope.Detail) throws {
            let envelope = ErrorEnvelope(error: detail)
            #expect(String(buffer: envelope.apiJSON) == String(buffer: try JSONEncoder.api.answer(envelope)))
        }
        for _ in 0..<500 {
            let reasons: [EligibilityReason]? =
                Bool.random(using: &generator)
                ? nil : (0..<Int.random(in: 0...3, using: &generator)).map { _ in EligibilityReason(rule: text(5), code: text(5), message: text(12)) }
            try expectEncoderText(
                ErrorEnvelope.Detail(code: text(6), message: text(20), field: Bool.random(using: &generator) ? text(6) : nil, reasons: reasons)
            )
        }
        // Fixed: every character below 128, two reasons with a field, no reasons, none at all.
        let every = String((0..<128).map { Character(Unicode.Scalar(UInt8($0))) })
        let two = [
            EligibilityReason(rule: "cap", code: "cap_reached", message: every), EligibilityReason(rule: "cool-down", code: "x/y", message: ""),
        ]
        for detail in [
            ErrorEnvelope.Detail(code: "not_eligible", message: every, field: every, reasons: two),
            ErrorEnvelope.Detail(code: "not_eligible", message: "No.", field: nil, reasons: []),
            ErrorEnvelope.Detail(code: "invalid_request", message: "", field: "a/b", reasons: nil),
        ] {
            try expectEncoderText(detail)
        }
        // The errors the API answers with, as sent.
        let refusal = APIError(
            .notEligible,
            "The customer is not eligible for this offer.",
            reasons: [EligibilityReason(rule: "cool-down", code: "cooling_down", message: "An offer was signed for this customer 2 days ago.")]
        )
        for error in [refusal, .storeUnavailable, .invalidRequest(field: "applicationUsername", "Send applicationUsername."), .malformedJSON] {
            let detail = ErrorEnvelope.Detail(code: error.code.rawValue, message: error.message, field: error.field, reasons: error.reasons)
            #expect(error.body == (try JSONEncoder.api.answer(ErrorEnvelope(error: detail))))
        }
    }
}
