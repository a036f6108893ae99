"""The limits on untrusted files: resumes and knowledge uploads, parsed in a limited worker process.

Each field is declared here once, with its bounds; :class:`careerwise.config.Settings` reads them from
the environment (``CAREERWISE_*``). Every limit is positive: an upload is always bounded in size, pages,
memory and time.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class UploadSettings(BaseModel):
    """No model configuration of its own: :class:`careerwise.config.Settings` sets it."""

    # --- resume review -------------------------------------------------------------------------
    resume_max_upload_bytes: int = Field(
        default=5 * 1024 * 1024, gt=0, description="Largest resume file accepted (bytes); over it, 413."
    )
    resume_max_pdf_pages: int = Field(default=5, ge=1, description="Most pages a resume PDF may have.")
    resume_max_chars: int = Field(
        default=12_000, ge=200, description="Most characters of text a resume may have once extracted."
    )

    # --- untrusted files: resumes and knowledge uploads are parsed in a limited worker process ------
    upload_worker_memory_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=32 * 1024 * 1024,
        description="Address space a parse worker may add to what it starts with; over it, 400.",
    )
    upload_worker_timeout: float = Field(
        default=4.0, gt=0, description="Seconds a resume parse may take before its worker is killed (400)."
    )
    upload_workers: int = Field(
        default=2, ge=1, description="Parse workers at once per app process; an upload waits for a free one."
    )
    upload_max_inflated_bytes: int = Field(
        default=30 * 1024 * 1024,
        gt=0,
        description="Most bytes a DOCX's members may inflate to in all; over it, 413.",
    )
    upload_max_archive_members: int = Field(default=1000, ge=1, description="Most members a DOCX may have.")
    upload_max_xml_elements: int = Field(
        default=300_000, ge=1000, description="Most XML elements a DOCX's parts may hold in all."
    )
    knowledge_max_pdf_pages: int = Field(
        default=300, ge=1, description="Most pages a knowledge PDF may have."
    )
    knowledge_parse_timeout: float = Field(
        default=60.0,
        gt=0,
        description="Seconds one knowledge file's parse may take before its worker is killed.",
    )
