import OfferEligibility
import Testing

@Suite struct DurationTests {
    struct Case: Sendable {
        var seconds: Double
        var roundingUp: Bool
        var expected: String
    }

    static let cases: [Case] = [
        Case(seconds: 30 * 86_400, roundingUp: false, expected: "30 days"),
        Case(seconds: 36 * 3_600, roundingUp: false, expected: "36 hours"),
        Case(seconds: 86_400, roundingUp: false, expected: "1 day"),
        Case(seconds: 7 * 86_400, roundingUp: true, expected: "7 days"),
        Case(seconds: 1.2 * 86_400, roundingUp: true, expected: "2 days"),
        Case(seconds: 90, roundingUp: true, expected: "2 minutes"),
        Case(seconds: 10, roundingUp: true, expected: "1 minute"),
        Case(seconds: 1e300, roundingUp: true, expected: "a very long time"),
    ]

    @Test(arguments: cases)
    func durationsReadAsPeopleSayThem(_ example: Case) {
        #expect(describeDuration(example.seconds, roundingUp: example.roundingUp) == example.expected)
    }
}
