import OfferApplication
import OfferModel
import Synchronization
import Testing

/// ``NotificationIngestion``: a `signedPayload` over the bound is refused before it is verified; what the ingestor
/// says of one within it is answered as it said it.
@Suite struct NotificationIngestionTests {
    /// The lengths of the payloads that reached the ingestor.
    final class Reached: Sendable {
        private let lengths = Mutex<[Int]>([])
        func add(_ length: Int) { lengths.withLock { $0.append(length) } }
        var all: [Int] { lengths.withLock { $0 } }
    }

    /// An ingestion that records what reaches the ingestor in `reached` and answers `outcome`.
    func ingestion(
        _ reached: Reached = Reached(),
        outcome: @escaping @Sendable () throws(OfferServiceError) -> IngestOutcome
    ) -> NotificationIngestion {
        NotificationIngestion { (payload: String) async throws(OfferServiceError) -> IngestOutcome in
            reached.add(payload.utf8.count)
            return try outcome()
        }
    }

    @Test func aPayloadOverTheBoundIsRefusedBeforeItIsVerified() async throws {
        let reached = Reached()
        let ingestion = ingestion(reached) { () throws(OfferServiceError) -> IngestOutcome in IngestOutcome.processed }
        let tooLong = String(repeating: "a", count: NotificationIngestion.maximumPayloadLength + 1)
        do {
            _ = try await ingestion.receive(signedPayload: tooLong)
            Issue.record("a payload over the bound should be refused")
        } catch {
            #expect(error.code == OfferServiceError.Code.invalidRequest && error.field == "signedPayload")
        }
        #expect(reached.all.isEmpty)
        let longest = String(repeating: "a", count: NotificationIngestion.maximumPayloadLength)
        #expect(try await ingestion.receive(signedPayload: longest) == IngestOutcome.processed)
        #expect(reached.all == [NotificationIngestion.maximumPayloadLength])
    }

    @Test(arguments: [IngestOutcome.processed, .duplicate, .stale, .ignored])
    func theIngestorsOutcomeIsAnswered(_ outcome: IngestOutcome) async throws {
        let ingestion = ingestion { () throws(OfferServiceError) -> IngestOutcome in outcome }
        #expect(try await ingestion.receive(signedPayload: "a.b.c") == outcome)
    }

    @Test func theIngestorsRefusalIsAnsweredAsItSaidIt() async throws {
        let refusal = OfferServiceError(.invalidSignedPayload, "The signedPayload did not verify.")
        let refusing = ingestion { () throws(OfferServiceError) -> IngestOutcome in throw refusal }
        await #expect(throws: refusal) { try await refusing.receive(signedPayload: "a.b.c") }
        let unavailable = ingestion { () throws(OfferServiceError) -> IngestOutcome in throw OfferServiceError.storeUnavailable }
        await #expect(throws: OfferServiceError.storeUnavailable) { try await unavailable.receive(signedPayload: "a.b.c") }
    }
}
