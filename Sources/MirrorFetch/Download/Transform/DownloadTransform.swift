import Foundation
import MirrorImages
import MirrorModel
import MirrorStorage

/// A run's transform (`--resize`, `--encode`, and the rows' `--blur-col` boxes) with what bounds its decoding: the
/// memory the transforms at once share, and the journal that remembers a decoder's crash.
package struct DownloadTransform: Sendable {
    package var transform: ImageTransform
    package var budget: DecodeBudget?
    package var journal: DecodeJournal?

    package init(_ transform: ImageTransform, budget: DecodeBudget?, journal: DecodeJournal?) {
        self.transform = transform
        self.budget = budget
        self.journal = journal
    }

    /// The transformed image, `boxes` blurred (in a new temporary file; the old one is gone either way), or why there is
    /// none.
    func apply(to image: VerifiedImage, blurring boxes: BlurBoxes? = nil) -> Result<VerifiedImage, DownloadError> {
        do throws(ImageTransform.Failure) {
            return .success(try transform.apply(to: image, validator: ImageValidator(), budget: budget, journal: journal, blurring: boxes))
        } catch {
            return .failure(.transformFailed(error))
        }
    }
}
