import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import OfferModel
import OfferStore
import Testing

@testable import OfferSignerServer

/// A transaction is presented only by the customer it belongs to, and refusals of App Store data speak plain words.
@Suite struct TransactionOwnershipTests {
    @Test(
        """
        a JWS transactionId the store knows as another customer's original transaction is 409 transaction_claimed; the customer's own and an \
        unknown one sign
        """,
        arguments: StoreBackend.available
    )
    func anotherCustomersTransactionIsRefused(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        try await fixture.application.test(.router) { client in
            let owned = fixture.transaction("owner", expires: Date() + 20 * 86_400, signedDate: Date())
            #expect(try await fixture.notify(client, .subscribed, .initialBuy, transaction: owned, signedDate: Date()).status == .ok)
            let theirs = owned.originalTransactionId ?? ""
            let jws = #","format":"jws""#
            let refused = try await fixture.sign(client, "everyone", "intruder", extra: #"\#(jws),"transactionId":"\#(theirs)""#)
            #expect(refused.status == .conflict, "\(refused.text)")
            let error = try refused.decode(ErrorBody.self).error
            #expect(error.code == "transaction_claimed" && error.field == "transactionId")
            #expect(!refused.text.contains("owner"))
            #expect(try await fixture.sign(client, "everyone", "owner", extra: #"\#(jws),"transactionId":"\#(theirs)""#).status == .ok)
            #expect(try await fixture.sign(client, "everyone", "intruder", extra: #"\#(jws),"transactionId":"2000000000000001""#).status == .ok)
            // A legacy signature does not carry the transaction: its transactionId only says whom to ask Apple about.
            #expect(try await fixture.sign(client, "everyone", "intruder", extra: #","transactionId":"\#(theirs)""#).status == .ok)
            // Nothing was signed for the intruder under the owner's transaction in a JWS.
            let log = try await fixture.store.issuedSignatures(
                matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle, applicationUsername: "intruder", limit: 10)
            )
            #expect(log.count == 2)
        }
        try await fixture.store.close()
    }

    @Test("a signedTransaction carrying another customer's appAccountToken is 403 customer_mismatch", arguments: StoreBackend.available)
    func anotherCustomersSignedTransactionIsRefused(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        try await fixture.application.test(.router) { client in
            let signed = try await fixture.signer.sign(fixture.transaction("holder", expires: Date() - 86_400, signedDate: Date() - 40 * 86_400))
            let response = try await fixture.sign(client, "everyone", "someone-else", extra: #","signedTransaction":"\#(signed)""#)
            #expect(response.status == .forbidden)
            let error = try response.decode(ErrorBody.self).error
            #expect(error.code == "customer_mismatch" && error.field == "signedTransaction")
        }
        try await fixture.store.close()
    }

    @Test("a JWS transactionId that is not an App Store transaction identifier is 400 before any decision")
    func aMalformedTransactionIdIsA400() async throws {
        let fixture = try await StoreFixture(.sqlite)
        try await fixture.application.test(.router) { client in
            // retention_30 would refuse this customer (no facts): the field's error comes first.
            let response = try await fixture.sign(client, "retention_30", "nobody", extra: #","format":"jws","transactionId":"abc""#)
            #expect(response.status == .badRequest)
            #expect(try response.decode(ErrorBody.self).error.field == "transactionId")
        }
        try await fixture.store.close()
    }

    @Test("refused App Store data is explained in plain words: no Swift type, no decoder text, no address")
    func refusalsSpeakPlainWords() async throws {
        let fixture = try await StoreFixture(.sqlite)
        struct WrongShape: Encodable, Sendable {
            let signedDate = "yesterday"
            let data = [1, 2]
        }
        let wrongShape = try await fixture.signer.sign(WrongShape())
        let garbage = ["eyJhbGciOiJFUzI1NiJ9.e30.a/b", "eyJhbGciOiJFUzI1NiJ9.e30.", "a.b.c", wrongShape]
        try await fixture.application.test(.router) { client in
            var messages: [String] = []
            for jws in garbage {
                let notification = try await client.post("/v1/notifications/appstore", json: #"{"signedPayload":"\#(jws)"}"#)
                #expect(notification.status == .badRequest)
                messages.append(try notification.decode(ErrorBody.self).error.message)
                let signing = try await fixture.sign(client, "everyone", "plain-user", extra: #","signedTransaction":"\#(jws)""#)
                #expect(signing.status == .badRequest)
                messages.append(try signing.decode(ErrorBody.self).error.message)
            }
            for message in messages {
                for word in ["Error(", "Dictionary", "Swift.", "DecodingError", "JWTKit", "Base64", "context at", "0x", "$", "Optional", "Array<"] {
                    #expect(!message.contains(word), "\(message)")
                }
            }
            #expect(messages.contains { $0.contains("not a compact JWS") })
        }
        try await fixture.store.close()
    }

    @Test("a body of null is asked to be a JSON object")
    func aNullBodyIsAskedForAnObject() async throws {
        try await TestService().application.test(.router) { client in
            let response = try await client.post("/v1/offers/sign", json: "null")
            #expect(response.status == .badRequest)
            let error = try response.decode(ErrorBody.self).error
            #expect(error.message == "The request body must be a JSON object.", "\(error.message)")
        }
    }
}

/// The double claim (issue 38): presentations at the same instant get one owner, on one process and on two replicas
/// sharing PostgreSQL; the refused one is 409 `transaction_claimed`, audited.
@Suite struct TransactionDoubleClaimTests {
    /// Where the second presentation goes: the same service, or a second replica on the same database.
    enum Topology: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqliteOneProcess, postgresOneReplica, postgresTwoReplicas
        var testDescription: String { rawValue }
        static var available: [Topology] { StoreBackend.postgresURL == nil ? [.sqliteOneProcess] : allCases }
        var backend: StoreBackend { self == .sqliteOneProcess ? .sqlite : .postgres }
    }

    /// Sends both requests at the same instant, one through each application.
    private func race(
        _ one: StoreFixture,
        _ two: StoreFixture,
        _ first: (String, String),
        _ second: (String, String)
    ) async throws -> (TestResponse, TestResponse) {
        try await one.application.test(.router) { clientOne in
            try await two.application.test(.router) { clientTwo in
                async let a = one.sign(clientOne, "everyone", first.0, extra: #","signedTransaction":"\#(first.1)""#)
                async let b = two.sign(clientTwo, "everyone", second.0, extra: #","signedTransaction":"\#(second.1)""#)
                return try await (a, b)
            }
        }
    }

    private func fixtures(_ topology: Topology) async throws -> (StoreFixture, StoreFixture) {
        let one = try await StoreFixture(topology.backend)
        return (one, topology == .postgresTwoReplicas ? try await StoreFixture(.postgres, replicaOf: one) : one)
    }

    @Test(
        """
        two customers presenting one signed transaction (no appAccountToken) at once: one owner, the other 409 transaction_claimed, audited — \
        25 rounds
        """,
        arguments: Topology.available
    )
    func twoCustomersOneTransaction(_ topology: Topology) async throws {
        let (one, two) = try await fixtures(topology)
        for round in 0..<25 {
            var transaction = one.transaction("ignored", expires: Date() + 86_400, signedDate: Date())
            transaction.appAccountToken = nil
            let jws = try await one.signer.sign(transaction)
            let (a, b) = try await race(one, two, ("first-\(round)", jws), ("second-\(round)", jws))
            #expect(Set([a.status, b.status]) == [.ok, .conflict], "round \(round): \(a.status) \(b.status)")
            let refused = a.status == .conflict ? a : b
            #expect(try refused.decode(ErrorBody.self).error.code == "transaction_claimed")
            let owners = try await one.store.customers(withOriginalTransactionId: try #require(transaction.originalTransactionId))
            #expect(owners.map(\.applicationUsername) == [a.status == .ok ? "first-\(round)" : "second-\(round)"])
        }
        let audit = try await one.store.auditEvents(limit: 10_000, since: Date() - 600)
        let refusals = audit.filter {
            $0.action == "customer.binding_conflict" && $0.details["source"] == "signed_transaction" && $0.target.hasPrefix(one.bundle)
        }
        #expect(refusals.count == 25)
        try await one.store.close()
        if topology == .postgresTwoReplicas { try await two.store.close() }
    }

    @Test(
        "one customer presenting two transactions of one subscription group at once: one is theirs, the other 409 — 25 rounds",
        arguments: Topology.available
    )
    func oneCustomerTwoTransactionsOfAGroup(_ topology: Topology) async throws {
        let (one, two) = try await fixtures(topology)
        for round in 0..<25 {
            var first = one.transaction("ignored", expires: Date() + 86_400, signedDate: Date())
            var second = one.transaction("ignored", expires: Date() + 86_400, signedDate: Date())
            first.appAccountToken = nil
            second.appAccountToken = nil
            let customer = "holder-\(round)"
            let (a, b) = try await race(one, two, (customer, try await one.signer.sign(first)), (customer, try await one.signer.sign(second)))
            #expect(Set([a.status, b.status]) == [.ok, .conflict], "round \(round): \(a.status) \(b.status)")
            let facts = try #require(try await one.store.customerFacts(for: CustomerKey(bundleIdentifier: one.bundle, applicationUsername: customer)))
            #expect(facts.subscriptions.count == 1)
        }
        try await one.store.close()
        if topology == .postgresTwoReplicas { try await two.store.close() }
    }
}
