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

    /// A file of captured notifications: blank lines skipped, a bare payload and `{"signedPayload": …}` taken alike,
    /// each line's outcome counted, a line that is neither refused with its number, a payload over the bound refused
    /// before the ingestor sees it, a store failure counted as failed (to retry), and the lines after each still read.
    @Test func aReplayCountsEveryLineAndGoesOnPastTheBadOnes() async throws {
        let reached = Reached()
        let outcomes = Mutex<[IngestOutcome]>([.processed, .duplicate, .stale])
        let replaying = NotificationIngestion { (payload: String) async throws(OfferServiceError) -> IngestOutcome in
            reached.add(payload.utf8.count)
            if payload == "down" { throw OfferServiceError.storeUnavailable }
            return outcomes.withLock { $0.isEmpty ? .ignored : $0.removeFirst() }
        }
        let tooLong = String(repeating: "a", count: NotificationIngestion.maximumPayloadLength + 1)
        let file = [
            "a.b.c", "", "  {\"signedPayload\": \"d.e.f\"}  ", "{not json", tooLong, "down", "g.h.i", "j.k.l",
        ].joined(separator: "\n")
        let summary = await replaying.replay(file)
        #expect(summary.processed == 1 && summary.duplicate == 1 && summary.stale == 1 && summary.ignored == 1)
        #expect(summary.refused == 2 && summary.failed == 1)
        #expect(summary.problems.count == 3)
        #expect(summary.problems.first?.hasPrefix("line 4:") == true)
        #expect(reached.all == [5, 5, 4, 5, 5], "the ingestor saw every line but the blank, the unreadable and the oversized")
    }
}
