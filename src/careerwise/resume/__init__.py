"""Resume review (履歷健檢): extraction, contact masking, the review chain, storage. docs/resume.md."""

from careerwise.resume.chain import ReviewRequest, ReviewResult, review_events
from careerwise.resume.contact import ContactSummary, mask_contact
from careerwise.resume.extract import ExtractedResume, ExtractLimits, ResumeFileError, extract_resume
from careerwise.resume.service import ResumeService, Stored, Upload
from careerwise.resume.store import Owner, delete_resumes, latest_resume_text, list_resumes

__all__ = [
    "ContactSummary",
    "ExtractLimits",
    "ExtractedResume",
    "Owner",
    "ResumeFileError",
    "ResumeService",
    "ReviewRequest",
    "ReviewResult",
    "Stored",
    "Upload",
    "delete_resumes",
    "extract_resume",
    "latest_resume_text",
    "list_resumes",
    "mask_contact",
    "review_events",
]
