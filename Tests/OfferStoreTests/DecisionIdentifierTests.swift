import OfferModel
import Testing

@Suite struct DecisionIdentifierTests {
    @Test("decision identifiers made at once on several threads are distinct, positive and spread over the whole range")
    func identifiersAreDistinctAndSpread() async {
        let perTask = 50_000
        let made = await withTaskGroup(of: [Int64].self) { group in
            for _ in 0..<4 { group.addTask { (0..<perTask).map { _ in PolicyDecisionRecord.newIdentifier() } } }
            return await group.reduce(into: [Int64]()) { $0 += $1 }
        }
        #expect(made.count == 4 * perTask)
        #expect(Set(made).count == made.count)
        #expect(made.allSatisfy { $0 >= 1 })
        // The top bit of the 63 set in about half of them, and the low bit: not a counter, not a clock.
        let high = made.filter { $0 >= 1 << 62 }.count
        let odd = made.filter { $0 & 1 == 1 }.count
        #expect(abs(high - made.count / 2) < made.count / 50)
        #expect(abs(odd - made.count / 2) < made.count / 50)
        // Consecutive identifiers are not neighbours.
        let sorted = made.sorted()
        #expect(zip(sorted, sorted.dropFirst()).filter { $1 - $0 == 1 }.count < 10)
    }
}
