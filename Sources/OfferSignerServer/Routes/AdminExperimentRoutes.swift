import Foundation
import Hummingbird
import OfferApplication

/// `GET /admin/experiments`: the policy's experiments and their customers exposed so far.
struct ExperimentListAnswer: ResponseEncodable {
    var experiments: [ExperimentSummary]
}

extension ExperimentReport: ResponseEncodable {}

/// `/admin/experiments`, `/admin/experiments/{id}`: the offer experiments of the policy in force and their results
/// (docs/experiments.md).
struct AdminExperimentRoutes {
    let experiments: ExperimentReporting

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.get("/experiments") { _, _ -> ExperimentListAnswer in
            ExperimentListAnswer(experiments: try await experiments.experimentSummaries())
        }
        group.get("/experiments/{id}") { _, context -> ExperimentReport in
            let identifier = try context.parameters.require("id")
            guard (1...64).contains(identifier.utf8.count) else {
                throw APIError.invalidRequest(field: "id", "An experiment's id is 1 to 64 characters.")
            }
            return try await experiments.experimentReport(identifier)
        }
    }
}
