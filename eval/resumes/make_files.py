"""Writes the resume evaluation set: every resume's text is here, the files are made from it.

Run from the repository root with the project's venv: ``.venv/bin/python eval/resumes/make_files.py``.
Text resumes are written as UTF-8 ``.txt``; PDFs by hand (a Type0 font with Identity-H encoding whose
character ids are Unicode code points plus a ToUnicode map, so a text extractor reads any script; no
font embedded), one column or two (the left column written first, then the right, as word processors
do); DOCX files with python-docx, as paragraphs or as a two-column table (heading cell | content cell).
All people, companies and figures are invented. ``labels.jsonl`` is written by hand, not by this script.
"""

from __future__ import annotations

import io
from pathlib import Path

HERE = Path(__file__).resolve().parent

# --------------------------------------------------------------------------- the resumes

R01 = """Jordan Lee
jordan.lee@example.com
Summary: Junior backend developer who enjoys building small web services.
Experience: Intern at Northwind Apps, worked on the REST API and wrote unit tests.
Skills: Python, Django, PostgreSQL, Git
Target role: backend engineer"""

R02 = """林雅婷
信箱：yating.lin@example.com
自我介紹：喜歡與人溝通，希望從事行政或客服工作。
經歷：曾在連鎖咖啡店擔任門市人員，負責點餐與收銀。
技能：Word、Excel、基礎英文會話
目標職位：行政助理"""

R03 = """Priya Raman
priya.raman@example.com | +1 415 555 0142 | linkedin.com/in/priya-raman-demo

SUMMARY
Data analyst with four years of experience turning sales data into pricing decisions.

EXPERIENCE
Harborview Retail, Data Analyst, 2021 - present
- Built a weekly pricing dashboard used by 35 store managers
- Cut the monthly reporting time from 3 days to 6 hours by automating the SQL pipeline
- Responsible for data quality checks on the sales warehouse
Bluefin Insurance, Junior Analyst, 2019 - 2021
- Helped the claims team with Excel reports
- Analysed 120,000 claims to find the 5 most common delay causes

SKILLS
SQL, Python (pandas), Tableau, Excel, A/B testing

EDUCATION
University of Washington, B.S. in Statistics, 2015 - 2019"""

R04 = """陳冠宇
手機：0912-000-321
Email：guanyu.chen@example.com

自我介紹
三年電商營運經驗，擅長活動企劃與數據追蹤，希望轉任產品經理。

工作經歷
星河購物 電商營運專員 2021-2024
負責平台活動規劃與上架作業
雙十一活動營收較前一年成長 28%，單日訂單 1.2 萬筆
導入自動化報表，每週節省 10 小時人工作業
協助客服處理退貨爭議

專業技能
SQL、Google Analytics、Excel 樞紐分析、Figma

學歷
國立政治大學 資訊管理學系 2017-2021"""

R05 = """Marcus Ortiz
marcus.ortiz@example.com, (206) 555-0199
Profile: Operations coordinator with a background in logistics and vendor management.
Work Experience:
Cascade Freight, Operations Coordinator, 2020 - 2024
Coordinated 40 weekly shipments across 3 warehouses
Reduced late deliveries by 18% by renegotiating two carrier contracts
Responsible for onboarding new drivers
Skills: SAP, Excel, route planning, Spanish (fluent)
Education: Oregon State University, B.A. Business, 2016 - 2020
Certifications: APICS CSCP (2022)"""

R06 = """張書豪
Email：shuhao.chang@example.com｜電話：02-2700-0000
【自我介紹】八年軟體開發經驗，專長後端架構與系統效能調校。
【工作經歷】
藍海雲端 資深後端工程師 2019-2024
將訂單服務從單體拆成 6 個微服務，部署時間由 2 小時降到 15 分鐘
負責 API 設計與程式碼審查
帶領 4 人小組導入監控告警，事故平均修復時間縮短 40%
【技能】Java、Spring Boot、Kubernetes、Redis、PostgreSQL
【學歷】國立清華大學 資訊工程學系 碩士 2015-2017"""

R07 = """Emily Novak
emily.novak@example.com  ·  +44 20 7946 0321

Marketing coordinator with three years in B2B software, looking for a content marketing role.

Brightlane Software, Marketing Coordinator, 2021 - 2024
Wrote and scheduled 12 blog posts a month; organic traffic grew 65% in one year
Ran 4 webinars with an average of 220 registrants
Helped the sales team prepare slide decks

Pine & Co Agency, Marketing Intern, 2020 - 2021
Assisted with social media posts for 6 clients

HubSpot, WordPress, Canva, Google Analytics, basic HTML

University of Leeds, BA English Literature, 2017 - 2020"""

R08 = """黃志明
zhiming.huang@example.com

熱愛烘焙與餐飲服務，個性細心，希望在餐飲業擔任儲備幹部。

好味道烘焙坊 門市人員 2021-2024
負責麵包陳列與門市清潔
協助店長盤點與叫貨
處理顧客訂單與電話預約

丙級烘焙食品技術士、食品安全衛生講習結業

國立高雄餐旅大學 烘焙管理系 2017-2021"""

R09 = """Samuel Okafor
samuel.okafor@example.com | +234 801 000 0000

Mechanical engineer with six years in HVAC design for commercial buildings.

Greenfield Engineering, Senior Mechanical Engineer, 2020 - present
Designed HVAC systems for 14 office buildings totalling 90,000 square metres
Lowered projected energy use by 22% on the Lakeside tower through heat recovery
Responsible for coordinating with architects and contractors

Coastal Build Ltd, Mechanical Engineer, 2018 - 2020
Prepared load calculations and equipment schedules

AutoCAD, Revit MEP, HAP, energy modelling, project coordination

University of Lagos, B.Eng. Mechanical Engineering, 2013 - 2018"""

R10_LEFT = [
    "Hannah Kim",
    "hannah.kim@example.com",
    "+82 10 0000 1234",
    "",
    "SKILLS",
    "Figma, Sketch",
    "User research, usability testing",
    "HTML, CSS",
    "",
    "EDUCATION",
    "Seoul National University",
    "BFA Visual Design, 2014 - 2018",
]
R10_RIGHT = [
    "PROFILE",
    "Product designer who turns research into simple interfaces.",
    "",
    "EXPERIENCE",
    "Moonlit Labs, Product Designer, 2020 - 2024",
    "Redesigned the checkout flow; conversion rose from 2.1% to 3.4%",
    "Ran 30 usability sessions for the mobile app",
    "Worked on the design system with engineers",
    "Pixelcraft Studio, UI Designer, 2018 - 2020",
    "Designed screens for client websites",
]

R11_TOP = ["吳佩珊", "Email：peishan.wu@example.com｜手機：0987-000-654"]
R11_ROWS = [
    ("自我介紹", "五年人資經驗，熟悉招募流程與員工關係，希望轉任 HRBP。"),
    (
        "工作經歷",
        "曜光科技 人資專員 2019-2024\n負責招募面試安排與新人報到\n一年完成 85 位工程師招募，平均到職天數由 45 天縮短為 30 天\n"
        "協助辦理員工教育訓練",
    ),
    ("專業技能", "勞基法實務、招募面談技巧、Excel、104 企業版"),
    ("學歷", "國立中央大學 人力資源管理研究所 碩士 2017-2019"),
]

R12_TOP = ["Daniel Murphy", "daniel.murphy@example.com | +61 400 000 222"]
R12_ROWS = [
    ("Summary", "Customer success manager for SaaS products, focused on retention."),
    (
        "Experience",
        "Tidewater SaaS, Customer Success Manager, 2021 - 2024\nManaged a portfolio of 60 mid-market accounts\n"
        "Raised net revenue retention from 96% to 108% in two years\nResponsible for quarterly business reviews",
    ),
    ("Skills", "Salesforce, Gainsight, Zendesk, SQL basics, onboarding design"),
    ("Education", "Monash University, Bachelor of Commerce, 2013 - 2016"),
]

R13_LEFT = [
    "李承翰",
    "chenghan.li@example.com",
    "0922-000-135",
    "",
    "技能",
    "Python、PyTorch",
    "SQL、Spark",
    "機器學習模型部署",
    "",
    "學歷",
    "國立成功大學",
    "統計學系 碩士 2018-2020",
]
R13_RIGHT = [
    "個人簡介",
    "資料科學家，專注於推薦系統與使用者行為分析。",
    "",
    "工作經歷",
    "晨星媒體 資料科學家 2020-2024",
    "建立新聞推薦模型，點擊率提升 17%",
    "參與資料平台建置",
    "負責每月使用者留存分析報告",
]

R14 = """Olivia Grant
olivia.grant@example.com

Summary
Primary school teacher moving into instructional design for online learning.

Experience
Maple Grove Primary School, Teacher, 2017 - 2024
Responsible for planning lessons for a mixed-ability class
Created reading activities and classroom games
Helped organise the school science fair
Mentored new teachers in the department

Skills
Lesson planning, Google Classroom, Canva, public speaking

Education
University of Bristol, PGCE Primary Education, 2016 - 2017"""

R15 = """# 郭家豪
- Email：jiahao.kuo@example.com
- 手機：0911-000-246

## 個人簡介
四年業務經驗，負責企業客戶開發，想轉任客戶成功經理。

## 工作經歷
### 光域資訊 企業業務 2020-2024
- 開發 25 家新企業客戶，年度業績達成率 120%
- 負責報價與合約追蹤
- 建立客戶續約提醒流程，續約率由 70% 提升至 85%

## 技能
- CRM（Salesforce）、簡報、商務談判

## 學歷
- 國立臺灣科技大學 工業管理系 2016-2020"""

R16 = """SOFIA ROSSI
sofia.rossi@example.com — +39 02 0000 0000
PROFILE — Financial analyst with five years in corporate FP&A.
EXPERIENCE — Alpine Foods, Financial Analyst, 2019 - 2024
Built the rolling 12-month forecast for a 40 million euro business unit
Prepared monthly variance reports for the CFO
Assisted with the annual budget process
SKILLS — Excel modelling, SAP BW, Power BI, Italian and English
EDUCATION — Bocconi University, MSc Finance, 2017 - 2019"""

R17 = """蔡欣怡
電話：0933-000-864｜Email：xinyi.tsai@example.com
求職目標：品牌行銷企劃
工作經驗：
晴天生活 行銷企劃 2021-2024
負責品牌社群經營與網紅合作
規劃季節性行銷活動
協助撰寫新品新聞稿
技能專長：Photoshop、Canva、社群廣告投放
學歷：輔仁大學 大眾傳播學系 2017-2021"""

R18 = """劉建國
jianguo.liu@example.com

機械工程師，專長自動化設備設計，五年半導體設備廠經驗。

精密動力股份有限公司 機構工程師 2019-2024
設計晶圓搬運模組，組裝工時減少 25%
負責供應商零件圖面審查
導入標準化零件庫，新機設計週期由 10 週縮短至 7 週

SolidWorks、AutoCAD、公差分析、PLC 基礎

國立中興大學 機械工程學系 碩士 2017-2019"""


# --------------------------------------------------------------------------- PDF by hand


def _obj(n: int, body: bytes) -> bytes:
    return f"{n} 0 obj\n".encode() + body + b"\nendobj\n"


def _stream(data: bytes) -> bytes:
    return f"<< /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"


def _to_unicode() -> bytes:
    """Character id = Unicode code point (Basic Multilingual Plane, surrogates left out)."""
    ranges = [f"<{hi:02X}00> <{hi:02X}FF> <{hi:02X}00>" for hi in range(256) if not 0xD8 <= hi <= 0xDF]
    blocks = [
        f"{len(ranges[i : i + 100])} beginbfrange\n" + "\n".join(ranges[i : i + 100]) + "\nendbfrange"
        for i in range(0, len(ranges), 100)
    ]
    return (
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
        "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n"
        + "\n".join(blocks)
        + "\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend"
    ).encode()


def _column(lines: list[str], x: int, top: int = 800, leading: int = 15) -> list[str]:
    ops = []
    for n, line in enumerate(lines):
        if line:
            ops.append(
                f"BT /F1 10 Tf 1 0 0 1 {x} {top - n * leading} Tm <{line.encode('utf-16-be').hex()}> Tj ET"
            )
    return ops


def pdf(columns: list[list[str]]) -> bytes:
    """One page; one column at x=50, or two at x=40 and x=300 (left written first)."""
    xs = [50] if len(columns) == 1 else [40, 300]
    ops: list[str] = []
    for x, lines in zip(xs, columns, strict=True):
        ops += _column(lines, x)
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [7 0 R] /Count 1 >>",
        3: b"<< /Type /Font /Subtype /Type0 /BaseFont /MingLiU /Encoding /Identity-H "
        b"/DescendantFonts [4 0 R] /ToUnicode 5 0 R >>",
        4: b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /MingLiU /CIDToGIDMap /Identity "
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> "
        b"/FontDescriptor 6 0 R /DW 1000 >>",
        5: _stream(_to_unicode()),
        6: b"<< /Type /FontDescriptor /FontName /MingLiU /Flags 4 /FontBBox [0 -200 1000 900] "
        b"/ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 700 /StemV 80 >>",
        7: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
        b"/Contents 8 0 R >>",
        8: _stream("\n".join(ops).encode()),
    }
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for num in sorted(objects):
        offsets[num] = out.tell()
        out.write(_obj(num, objects[num]))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for num in sorted(objects):
        out.write(f"{offsets[num]:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


# --------------------------------------------------------------------------- DOCX


def docx_paragraphs(text: str) -> bytes:
    import docx

    document = docx.Document()
    for line in text.split("\n"):
        document.add_paragraph(line)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_table(top: list[str], rows: list[tuple[str, str]]) -> bytes:
    """Name and contact as paragraphs, then a two-column table: the heading cell, the content cell."""
    import docx

    document = docx.Document()
    for line in top:
        document.add_paragraph(line)
    table = document.add_table(rows=len(rows), cols=2)
    for row, (heading, content) in zip(table.rows, rows, strict=True):
        row.cells[0].text = heading
        row.cells[1].text = content
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


FILES: dict[str, bytes] = {
    "r01_en_short_inline.txt": R01.encode(),
    "r02_zh_short_inline.txt": R02.encode(),
    "r03_en_headings.pdf": pdf([R03.split("\n")]),
    "r04_zh_headings.docx": docx_paragraphs(R04),
    "r05_en_inline.docx": docx_paragraphs(R05),
    "r06_zh_inline_brackets.pdf": pdf([R06.split("\n")]),
    "r07_en_no_headings.txt": R07.encode(),
    "r08_zh_no_headings_no_numbers.txt": R08.encode(),
    "r09_en_no_headings.pdf": pdf([R09.split("\n")]),
    "r10_en_two_columns.pdf": pdf([R10_LEFT, R10_RIGHT]),
    "r11_zh_table.docx": docx_table(R11_TOP, R11_ROWS),
    "r12_en_table.docx": docx_table(R12_TOP, R12_ROWS),
    "r13_zh_two_columns.pdf": pdf([R13_LEFT, R13_RIGHT]),
    "r14_en_no_numbers.txt": R14.encode(),
    "r15_zh_markdown.txt": R15.encode(),
    "r16_en_inline_dashes.docx": docx_paragraphs(R16),
    "r17_zh_inline_no_numbers.txt": R17.encode(),
    "r18_zh_no_headings.docx": docx_paragraphs(R18),
}


def main() -> None:
    for name, data in FILES.items():
        (HERE / name).write_bytes(data)
    print(f"wrote {len(FILES)} files to {HERE}")


if __name__ == "__main__":
    main()
