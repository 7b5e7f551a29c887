# IQM speedup over cuSPARSE (failures as 1), 95% stratified bootstrap intervals: written by sparserl; run `gnuplot intervals.gp` to redraw.
set terminal pngcairo noenhanced size 900,182 font 'sans,10'
set output '/work/main/docs/examples/study-pilot-large-h200-grpo20/tables/spmv-f32-val/intervals.png'
set linetype 1 lc rgb '#0072B2' lw 2 pt 7 ps 1.1
set linetype 2 lc rgb '#D55E00' lw 2 pt 7 ps 1.1
set datafile missing 'NaN'
set grid xtics
unset key
set xrange [0.8437332705901875:1.15]
set logscale x
set xtics ('1x' 1.0)
set arrow from 1.0, graph 0 to 1.0, graph 1 nohead dt 2 lc rgb '#777777'
set multiplot layout 1,1 title 'IQM speedup over cuSPARSE (failures as 1), 95% stratified bootstrap intervals'
set title 'all (20 matrices)'
set xlabel 'speedup (cuSPARSE time / kernel time), log scale'
set yrange [1.5:-0.5]
set ytics ('sft' 0, 'grpo' 1)
plot '/work/main/docs/examples/study-pilot-large-h200-grpo20/tables/spmv-f32-val/intervals.dat' index 0 using 2:1:3:4:5 with xerrorbars lc variable, NaN notitle
unset multiplot
