"""A machine judge's pure parts (no Django): the prompt (`prompt`), the answer contract (`answer`) and
the client of an OpenAI-compatible chat completions endpoint with its retry policy (`client`).

labeling stores judges, their jobs and their answers and runs the jobs on Celery (docs/judge.md); this
package only turns plain data into requests and replies into plain data.
"""
