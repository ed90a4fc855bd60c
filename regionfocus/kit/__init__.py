"""The run kit the harnesses share and the algorithm never imports: the run folder and its log
(`runlog`), the report page shell (`report_shell`) and the reports' figures (`figures`), how
Chromium is launched (`chromium`), RegionFocus's command-line flags (`flags`) and the allocator
tuning of long runs (`allocator`)."""
